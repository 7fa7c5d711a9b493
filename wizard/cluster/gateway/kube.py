"""The one module that imports the Kubernetes client (``kubernetes.aio``): every name the gateway uses.

The rest of the gateway package (base, connect, reads, writes, watches, execs) takes the client's names
from here, so the project's whole dependency on the library — which parts of it, at which version — is
read in one place, and nothing outside :mod:`wizard.cluster.gateway` reaches it (import-linter keeps both).
"""

from __future__ import annotations

from kubernetes.aio import client, config, watch
from kubernetes.aio.client.exceptions import ApiException
from kubernetes.aio.config import ConfigException

__all__ = ["ApiException", "ConfigException", "client", "config", "watch"]
