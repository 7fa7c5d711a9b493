"""How a cluster's images are reached for the image checks: the registry client's routes and trust.

A real cluster's images are asked of the registries themselves, or of the mirrors the user names
(``driver.registryMirrors``, ``--registry-mirror``). The demo cluster names in its kubeconfig marker the
mirrors its simulated kubelet pulls through: its own API server, so the kubeconfig's CA is trusted
for it and an unverified connection (``insecure-skip-tls-verify``) stays unverified there too.

On a real cluster this machine's own registry configuration counts too (:mod:`wizard.registry.hostconfig`:
registries.conf and containerd hosts.toml mirrors, ``certs.d`` CAs and client certificates), under
the user's mirrors: a host the user names is routed as the user says. The demo ignores it: its
kubeconfig alone says how its images are reached.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from wizard.cluster.gateway import Gateway
from wizard.engine.registry_routes import mirror_options
from wizard.registry.client import RegistryClient
from wizard.registry.hostconfig import HostRegistryConfig, read_host_config

DEMO_ORIGIN = "the demo cluster's kubeconfig"
MAX_NOTES = 10


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


def routed_client(
    options_for: Callable[[list[str], Mapping[str, str]], dict[str, Any]],
    hosts: list[str],
    *,
    mirrors: Mapping[str, str] | None = None,
    mirror_origins: Mapping[str, str] | None = None,
    auth_file: str | None,
    insecure_registries: Iterable[str],
    timeout: float,
    ca_files: Sequence[str] = (),
    host_config: bool = True,
    host_mirrors: bool = True,
) -> RegistryClient:
    """A registry client for ``hosts``: ``options_for(hosts, mirrors)`` routes them (the cluster's way), with
    this machine's registry configuration under the user's ``mirrors`` when ``host_config`` (see the module;
    ``host_mirrors`` False keeps its certs.d folders and credential helpers but not its mirrors and insecure hosts).

    ``mirror_origins`` says where each of the user's mirrors came from, for the front ends' "where from" notes.
    ValueError (one line naming the file) when the auth file or a CA file cannot be used.
    """
    system = read_host_config() if host_config and host_mirrors else HostRegistryConfig()
    user = dict(mirrors or {})
    options = dict(options_for(hosts, {**system.mirrors, **user}))
    routes: dict[str, str] = options.get("mirrors") or {}
    origins = {
        host: (mirror_origins or {}).get(host, "driver.registryMirrors")
        if host in user
        else system.mirror_origins.get(host, DEMO_ORIGIN)
        for host in routes
    }
    endpoints = {h.lower() for h in hosts} | {location.split("/", 1)[0].lower() for location in routes.values()}
    insecure_origins = {host: origin for host, origin in system.insecure.items() if host in endpoints}
    insecure = [*insecure_registries, *options.pop("insecure_registries", []), *insecure_origins]
    return RegistryClient(
        auth_file=auth_file,
        insecure_registries=insecure,
        timeout=timeout,
        ca_files=ca_files,
        certs_dirs=None if host_config else [],
        endpoint_trust=system.trust,
        credential_helpers=host_config,
        route_origins=origins,
        insecure_origins=insecure_origins,
        notes=system.notes[:MAX_NOTES],
        **options,
    )
