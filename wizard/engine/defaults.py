"""Defaults from the cluster and the catalog: what a newcomer gets by accepting every field.

The image source follows the GPU nodes' OS (NVIDIA publishes Ubuntu and RHEL driver images on nvcr.io;
the SLE Micro precompiled images this release validated live at ``docker.io/alaudadockerhub``). The
registry the cluster pulls from is the one the live policy already uses; else the operator's own
registry when it is a private one (an air-gap mirror); else NVIDIA's registry when the images are
published there; else nothing: a public copy is a *source* to mirror from, and the user's mirror is
theirs to name (:func:`repositories_holding` finds the ones that already hold every tag).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from wizard.engine.modes import Mode

__all__ = [
    "NVIDIA_REGISTRY",
    "PUBLIC_REGISTRY_HOSTS",
    "candidate_hosts",
    "default_source",
    "default_target",
    "is_public_registry",
    "repositories_holding",
]

NVIDIA_REGISTRY = "nvcr.io/nvidia"
"""Where NVIDIA publishes its driver images (upstream for every OS, precompiled for Ubuntu) and the operator."""
SLE_MICRO_SOURCE = ("docker.io/alaudadockerhub", "nvidia-driver")
"""Where the SLE Micro precompiled images this release validated are published (``assets/catalog.yaml``)."""
SLE_MICRO_TAG_PREFIXES = ("sle-micro", "sl-micro")
PUBLIC_REGISTRY_HOSTS = frozenset(
    {"nvcr.io", "docker.io", "index.docker.io", "registry-1.docker.io", "quay.io", "ghcr.io", "gcr.io"}
    | {"registry.k8s.io", "public.ecr.aws", "mcr.microsoft.com", "registry.access.redhat.com"}
)
"""Public registries: never a site's mirror, so never taken for one."""


def _host(repository: str) -> str:
    first = repository.split("/", 1)[0].lower()
    return first if ("." in first or ":" in first or first == "localhost") else "docker.io"


def is_public_registry(repository: str) -> bool:
    """``repository`` (``nvcr.io/nvidia``, ``registry.example.com/mlops``) is on a public registry."""
    return _host(repository) in PUBLIC_REGISTRY_HOSTS


def default_source(mode: Mode, tag_oses: Sequence[str]) -> tuple[str, str]:
    """(source repository, image name) for ``mode`` on GPU nodes of these OS tags; ``("", "")`` when none applies.

    Precompiled: the SLE Micro copies when every GPU node runs SLE Micro, else NVIDIA's own ``driver``
    image (its precompiled tags are ``<branch>-<kernel>-<os>``, Ubuntu's among them).
    """
    if mode is Mode.PREINSTALLED:
        return "", ""
    if mode is Mode.PRECOMPILED and tag_oses and all(t.startswith(SLE_MICRO_TAG_PREFIXES) for t in tag_oses):
        return SLE_MICRO_SOURCE
    return NVIDIA_REGISTRY, "driver"


def default_target(source: str, *, live_repository: str = "", operator_image: str = "") -> str:
    """The registry the cluster pulls the driver from, as far as the cluster tells; ``""``: the user names it.

    The live policy's repository first (the cluster pulls from it today); then the operator's own
    registry when it is private (an air-gap mirror); then the source itself when it is NVIDIA's
    registry, from which the cluster pulled the operator. A public copy elsewhere (Docker Hub) is a
    place to copy from, never taken for the site's mirror.
    """
    if live_repository:
        return live_repository
    operator_repository = operator_image.rsplit("/", 1)[0] if "/" in operator_image else ""
    if operator_repository and not is_public_registry(operator_repository):
        return operator_repository
    if source and _host(source) == _host(NVIDIA_REGISTRY):
        return source
    return ""


def candidate_hosts(*repositories: Iterable[str]) -> list[str]:
    """The private registry hosts among these repositories or hosts (mirrors, live images), in first-seen order."""
    hosts: dict[str, None] = {}
    for group in repositories:
        for repository in group:
            if repository and not is_public_registry(repository):
                hosts[_host(repository)] = None
    return list(hosts)


def repositories_holding(listing: Mapping[str, Iterable[str]], image: str, tags: Iterable[str]) -> list[str]:
    """The repositories (``host/path``) whose ``image`` holds every one of ``tags``.

    ``listing``: ``host/path/image`` -> its tags, as the registries answered.
    """
    wanted = set(tags)
    found = []
    for reference, present in listing.items():
        path, _, name = reference.rpartition("/")
        if name == image and path and wanted and wanted <= set(present):
            found.append(path)
    return sorted(found)
