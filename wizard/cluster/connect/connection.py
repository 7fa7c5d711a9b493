"""Opening a connection to a cluster: credentials loaded like kubectl, then proof the server accepts them.

:meth:`wizard.cluster.facade.Cluster.connect` is the front ends' way in; this is its plumbing: the
gateway, what the user is told about the cluster (:class:`~wizard.engine.results.ClusterInfo`), and the
demo's marker, read from the demo's own kubeconfig (never from a server reply).
"""

from __future__ import annotations

from typing import Any

from wizard import collector
from wizard.cluster.access.kubeconfig import demo_marker, demo_scenario
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.results import ClusterInfo


async def open_gateway(
    *,
    kubeconfig: str | None,
    context: str | None,
    in_cluster: bool,
    timeout: float,
    credential: dict[str, Any] | None = None,
) -> tuple[Gateway, ClusterInfo, dict[str, str] | None]:
    """A gateway whose credentials the server accepted, the cluster's info, and the demo's marker (None: not the demo).

    A rejected credential is a ClusterError saying so (401/403); the gateway is closed on every failure.
    """
    # The Kubernetes client's classes are imported (~190,000 objects): no collection walks them meanwhile,
    # nor as the pause ends (a run's pause freezes what it kept first); they then join the oldest generation.
    with collector.frozen(), collector.paused():
        gateway = await Gateway.connect(
            kubeconfig=kubeconfig, context=context, in_cluster=in_cluster, timeout=timeout, credential=credential
        )
    try:
        marker = None if in_cluster else demo_marker(kubeconfig, gateway.context)
        version = await gateway.version()
        await gateway.access_review("list", "nodes")  # /version is public; this proves the credentials
    except ApiError as exc:
        await gateway.close()
        if exc.status in (401, 403):
            raise ClusterError(
                f"{gateway.server} rejected the credentials of context {gateway.context!r} ({exc.status})",
                "log in again: the token or client certificate is missing, expired or not accepted",
            ) from None
        raise
    except BaseException:
        await gateway.close()
        raise
    info = ClusterInfo(
        context=gateway.context,
        server=gateway.server,
        version=str(version.get("gitVersion") or ""),
        demo=marker is not None,
        insecure=not gateway.configuration.verify_ssl,
        demo_scenario=demo_scenario(kubeconfig, gateway.context) if marker is not None else "",
    )
    return gateway, info, marker
