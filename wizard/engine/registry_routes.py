"""Which registry answers the image checks for a cluster: the hosts the image names say, or their mirrors.

A real cluster pulls from the registries its image names say, unless its container runtime pulls a
host through a mirror (containerd's hosts.toml, CRI-O's registries.conf). The user says so with
``--registry-mirror SOURCE=MIRROR``, the answers file's ``driver.registryMirrors`` or the Driver
step; the built-in demo cluster says so in the kubeconfig it writes (its marker, read by
:mod:`wizard.cluster.access.kubeconfig`): its catalog is served by its API server under ``/v2/<host>/…``,
or by a real registry on loopback. :func:`mirror_options` turns such a map into
:class:`wizard.registry.client.RegistryClient` keyword arguments, the same way for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from wizard.engine.naming import split_reference

if TYPE_CHECKING:  # the TUI imports this module while building a client; pydantic is not needed for it
    from wizard.engine.plan import Plan


@dataclass(frozen=True)
class AccessNote:
    """How the image checks reach one registry, and where that came from (never a secret).

    ``kind``: ``mirror`` (``detail`` is the mirror), ``credentials`` (``detail`` the user name or
    "none"), ``tls`` (``detail`` the CA, client certificate or "verification off"), ``note`` (a
    configuration entry that was skipped, and why).
    """

    kind: Literal["mirror", "credentials", "tls", "note"]
    host: str
    detail: str
    origin: str = ""

    def line(self) -> str:
        """One line for a front end: ``nvcr.io  mirror https://… (from registries.conf /etc/…)``."""
        origin = f" (from {self.origin})" if self.origin else ""
        return f"{self.host}  {self.kind} {self.detail}{origin}" if self.host else f"{self.detail}{origin}"


def repository_host(repository: str) -> str:
    """The registry host of a repository (``registry.example.com/mlops`` -> ``registry.example.com``), or ""."""
    try:
        return split_reference(f"{repository}/image:tag")[0] if repository else ""
    except ValueError:
        return ""


def registry_hosts(plan: Plan) -> list[str]:
    """The registry hosts the plan's images live on: where the cluster pulls from and the mirror source, the
    driver's and the operands' (the chart's public hosts, and ``driver.operandRegistry``'s when the plan names one).

    Every host the image checks ask gets its mirror (``driver.registryMirrors``) from this list: a host left out
    is asked directly, as a runtime mirroring it would not.
    """
    from wizard.engine.releases import rules  # lazily: the TUI imports this module without the engine's rules

    hosts = {repository_host(plan.driver.repository), repository_host(plan.driver.source)}
    hosts.add(repository_host(plan.driver.operandRegistry))
    hosts.update(repository_host(image.repository) for image in rules(plan.operator.bundle).images)
    return sorted(h for h in hosts if h)


def mirror_options(mirrors: Mapping[str, str], hosts: Iterable[str]) -> dict[str, Any]:
    """``RegistryClient`` keyword arguments that send the checks of ``hosts`` to their mirrors.

    ``mirrors`` maps a registry host to a checked mirror URL (:func:`wizard.engine.plan.check_mirror_url`):
    ``https://mirror.example.com/prefix`` answers ``nvcr.io/nvidia/driver`` as ``prefix/nvidia/driver``;
    a loopback ``http://`` mirror is listed as insecure (the client then falls back to plain http).
    ``{}`` when no host of ``hosts`` has a mirror.
    """
    wanted = {h.strip().lower() for h in hosts if h.strip()}
    routes: dict[str, str] = {}
    insecure: list[str] = []
    for source, url in sorted(mirrors.items()):
        if source.lower() not in wanted:
            continue
        scheme, _, location = url.partition("://")
        routes[source.lower()] = location.rstrip("/")
        endpoint = location.split("/", 1)[0]
        if scheme == "http" and endpoint not in insecure:
            insecure.append(endpoint)
    if not routes:
        return {}
    return {"mirrors": routes, "insecure_registries": insecure}
