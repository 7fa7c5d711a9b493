"""The one door to the Kubernetes API: the official client's asyncio flavour (``kubernetes.aio``).

Nothing else in ``wizard/`` imports ``kubernetes``, and in this package only :mod:`~.kube` does; the
rest takes the client's names from it, in modules along its seams —
:mod:`~wizard.cluster.gateway.base` (the connection and the one request path), :mod:`~.connect`
(credentials like kubectl), :mod:`~.reads`, :mod:`~.writes`, :mod:`~.watches` and :mod:`~.execs`
(commands over the websocket exec API). Every call hands back plain JSON dicts: the engine reads nodes
and custom resources as JSON (as :mod:`wizard.engine.facts` expects) and never builds thousands of
pydantic models. Each call is bounded by a timeout; calls that are safe to repeat (reads, dry-runs,
access reviews) are retried on 5xx and dropped connections, any call on 429, honouring
``Retry-After``; an exec the server refused before starting the command is retried too (the policy:
:mod:`wizard.retry`). ``Gateway.stats`` counts requests and retries. Errors come out as
:class:`wizard.cluster.errors.ClusterError` subclasses worded for the user.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wizard.cluster.gateway.base import APPLY_CONTENT_TYPE, DEFAULT_TIMEOUT, FIELD_MANAGER
from wizard.cluster.gateway.connect import import_api_classes, in_cluster_configuration, load_kubeconfig
from wizard.cluster.gateway.execs import SHOWN_COMMAND, Execs
from wizard.cluster.gateway.reads import Reads
from wizard.cluster.gateway.watches import Gone, Watches
from wizard.cluster.gateway.writes import Writes

__all__ = ["APPLY_CONTENT_TYPE", "DEFAULT_TIMEOUT", "FIELD_MANAGER", "SHOWN_COMMAND", "Gateway", "Gone"]


class Gateway(Reads, Writes, Watches, Execs):
    """An authenticated connection to one API server; create with :meth:`connect`, end with :meth:`close`."""

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
        credential: dict[str, Any] | None = None,
    ) -> Gateway:
        """Load credentials like kubectl does (no request is made yet); ``credential``: the context's exec
        plugin already answered (see :func:`wizard.cluster.access.kubeconfig.plugin_credential`)."""
        if in_cluster:
            configuration, chosen = in_cluster_configuration(), "in-cluster"
        else:
            configuration, chosen = await load_kubeconfig(kubeconfig, context, credential)
        # Only once the credentials are there (a failing exec plugin or a bad kubeconfig costs no import),
        # and in a thread: importing the generated API classes is a long CPU cost in a fresh process.
        await asyncio.to_thread(import_api_classes)
        return cls(configuration, context=chosen, timeout=timeout)
