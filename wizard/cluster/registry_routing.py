"""How a cluster's images are reached for the image checks: the registry client's routes and trust.

A real cluster's images are asked of the registries themselves, or of the mirrors the user names
(``driver.registryMirrors``, ``--registry-mirror``). The demo cluster names in its kubeconfig marker the
mirrors its simulated kubelet pulls through: its own API server, so the kubeconfig's CA is trusted
for it and an unverified connection (``insecure-skip-tls-verify``) stays unverified there too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wizard.cluster.gateway import Gateway
from wizard.engine.registry_routes import mirror_options
from wizard.registry.client import RegistryClient


def cluster_registry_options(
    gateway: Gateway,
    demo_mirrors: Mapping[str, str] | None,
    hosts: Iterable[str],
    mirrors: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``RegistryClient`` keyword arguments for ``hosts`` as the cluster behind ``gateway`` pulls them.

    ``demo_mirrors``: the demo's marker (None on a real cluster); the user's ``mirrors`` win over it.
    ``{}``: ask the registries themselves.
    """
    options = mirror_options({**(demo_mirrors or {}), **(mirrors or {})}, hosts)
    if demo_mirrors is None or not options:
        return options
    configuration = gateway.configuration
    api_endpoint = gateway.server.split("://", 1)[-1].rstrip("/")
    if not getattr(configuration, "verify_ssl", True):
        options["insecure_registries"] = sorted({*options["insecure_registries"], api_endpoint})
    ca_path = getattr(configuration, "ssl_ca_cert", None)
    if ca_path:
        with contextlib.suppress(OSError):  # the client library's copy of the kubeconfig's CA data
            options["ca_data"] = Path(str(ca_path)).read_text(encoding="ascii")
    return options


def registry_client(
    options: dict[str, Any], *, auth_file: str | None, insecure_registries: Iterable[str], timeout: float
) -> RegistryClient:
    """A registry client with these routes, the user's auth file and insecure hosts (ValueError: unreadable auth file)."""
    insecure = [*insecure_registries, *options.pop("insecure_registries", [])]
    return RegistryClient(auth_file=auth_file, insecure_registries=insecure, timeout=timeout, **options)
