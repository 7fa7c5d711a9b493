"""Which registry answers the image checks for a cluster: the real hosts, or the demo cluster's own registry.

A real cluster pulls from the registries its image names say, so the wizard asks those. The demo
cluster pulls from a simulated catalog; its API server answers for every catalog host under
``/v2/<host>/…`` (or the scenario names a real registry on loopback that holds the catalog
hosts' images), and says which in its ``/version`` reply (:data:`ADVERT_KEY`). A trainee who runs
``gpu-wizard demo serve`` and connects through its kubeconfig gets the same routing as the
in-process demo: :func:`demo_registry_options` turns that reply, the connection's server address
and its CA into :class:`wizard.registry.client.RegistryClient` keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from wizard.engine.naming import split_reference

if TYPE_CHECKING:  # the TUI imports this module while building a client; pydantic is not needed for it
    from wizard.engine.plan import Plan

ADVERT_KEY = "gpuWizardRegistry"
"""The demo's ``/version`` field: ``{"served": true, "hosts": [...]}`` when its API server answers the
``/v2/`` API itself, ``{"served": false, "url": "http://127.0.0.1:5055", "hosts": [...]}`` when a real
registry on loopback holds the images of ``hosts``."""


def repository_host(repository: str) -> str:
    """The registry host of a repository (``registry.example.com/mlops`` -> ``registry.example.com``), or ""."""
    try:
        return split_reference(f"{repository}/image:tag")[0] if repository else ""
    except ValueError:
        return ""


def registry_hosts(plan: Plan) -> list[str]:
    """The registry hosts the plan's images live on: where the cluster pulls from and the mirror source."""
    hosts = {repository_host(plan.driver.repository), repository_host(plan.driver.source)}
    return sorted(h for h in hosts if h)


def advertisement(*, served: bool, hosts: Iterable[str], url: str = "") -> dict[str, Any]:
    """The :data:`ADVERT_KEY` value a demo API server puts in its ``/version`` reply."""
    advert: dict[str, Any] = {"served": served, "hosts": sorted(set(hosts))}
    if not served:
        advert["url"] = url
    return advert


def demo_registry_options(
    advert: Mapping[str, Any] | None,
    *,
    server: str,
    hosts: Iterable[str],
    ca_data: str | None = None,
    verify: bool = True,
) -> dict[str, Any]:
    """``RegistryClient`` keyword arguments that send the checks of ``hosts`` to the demo's registry.

    ``server`` is the API server's URL as the connection knows it; ``ca_data`` its CA (PEM) and
    ``verify`` whether the connection verifies TLS. A demo serving the catalog itself answers for
    every host (a simulated world never sends a trainee's checks to the real network); a demo that
    names a real registry routes only its catalog hosts there. ``{}`` without an advertisement.
    """
    if not isinstance(advert, Mapping):
        return {}
    wanted = sorted({h.strip().lower() for h in hosts if h.strip()})
    if advert.get("served"):
        endpoint = server.split("://", 1)[-1].rstrip("/")
        options: dict[str, Any] = {"mirrors": {host: f"{endpoint}/{host}" for host in wanted}}
        if server.startswith("http://") or not verify:
            options["insecure_registries"] = [endpoint]
        elif ca_data:
            options["ca_data"] = ca_data
        return options
    url = str(advert.get("url") or "")
    endpoint = url.split("://", 1)[-1].rstrip("/")
    catalog = {str(h).lower() for h in advert.get("hosts") or []}
    if not endpoint:
        return {}
    return {
        "mirrors": {host: endpoint for host in wanted if host in catalog and host != endpoint.lower()},
        "insecure_registries": [endpoint] if url.startswith("http://") else [],
    }
