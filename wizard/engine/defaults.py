"""Defaults from the cluster and the catalog: what a newcomer gets by accepting every field.

The image source follows the GPU nodes' OS (NVIDIA publishes Ubuntu and RHEL driver images on nvcr.io;
the SLE Micro precompiled images this release validated live at ``docker.io/alaudadockerhub``). The
registry the cluster pulls from is the one the live policy already uses; else the operator's own
registry when it is a private one (an air-gap mirror); else NVIDIA's registry when the images are
published there; else nothing: a public copy is a *source* to mirror from, and the user's mirror is
theirs to name (:func:`repositories_holding` finds the ones that already hold every tag).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wizard.engine.catalog import driver_versions
from wizard.engine.driver_version import branch_of, newest_first
from wizard.engine.facts import ClusterFacts
from wizard.engine.modes import Mode
from wizard.engine.naming import (
    Release,
    image_repository,
    precompiled_suffix,
    tag_version,
    tagged_versions,
    upstream_suffix,
)
from wizard.engine.sources import (
    NVIDIA_REGISTRY,
    SLE_MICRO_SOURCE,
    SLE_MICRO_TAG_PREFIXES,
    default_source,
    source_defaults,
    source_required,
)

__all__ = [
    "NVIDIA_REGISTRY",
    "PUBLIC_REGISTRY_HOSTS",
    "SLE_MICRO_SOURCE",
    "SLE_MICRO_TAG_PREFIXES",
    "RegistryOffer",
    "candidate_hosts",
    "catalog_versions",
    "default_answers",
    "default_source",
    "default_target",
    "is_public_registry",
    "pick_upstream_version",
    "registry_offers",
    "repositories_holding",
    "search_answers",
    "source_defaults",
    "source_required",
    "upstream_versions",
    "versions_holding",
]

PUBLIC_REGISTRY_HOSTS = frozenset(
    {"nvcr.io", "docker.io", "index.docker.io", "registry-1.docker.io", "quay.io", "ghcr.io", "gcr.io"}
    | {"registry.k8s.io", "public.ecr.aws", "mcr.microsoft.com", "registry.access.redhat.com"}
)
"""Public registries: never a site's mirror, so never taken for one."""


def _host(repository: str) -> str:
    first = repository.split("/", 1)[0].lower()
    return first if ("." in first or ":" in first or first == "localhost") else "docker.io"


def registry_host(repository: str) -> str:
    """The registry host of ``repository`` (``docker.io`` for a Docker Hub path), lower-cased."""
    return _host(repository)


def is_public_registry(repository: str) -> bool:
    """``repository`` (``nvcr.io/nvidia``, ``registry.example.com/mlops``) is on a public registry."""
    return _host(repository) in PUBLIC_REGISTRY_HOSTS


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


def repositories_holding(
    listing: Mapping[str, Iterable[str]], image: str, tags: Iterable[str], *, partial: bool = False
) -> list[str]:
    """The repositories (``host/path``) whose ``image`` holds every one of ``tags``; ``partial``: when none
    holds them all, those holding the most (a node whose kernel has no image yet must not hide the mirror).

    ``listing``: ``host/path/image`` -> its tags, as the registries answered.
    """
    wanted = set(tags)
    held: dict[str, int] = {}
    for reference, present in listing.items():
        path, _, name = reference.rpartition("/")
        if name == image and path and wanted:
            held[path] = len(wanted & set(present))
    full = sorted(path for path, count in held.items() if count == len(wanted))
    if full or not partial:
        return full
    most = max(held.values(), default=0)
    return sorted(path for path, count in held.items() if count == most and count)


def versions_holding(listing: Mapping[str, Iterable[str]], image: str, suffixes: Iterable[str]) -> dict[str, list[str]]:
    """Repository (``host/path``) -> the driver versions whose ``image`` tag exists for every suffix
    (``-<kernel>-<os>`` of each precompiled group), newest first; repositories with none are left out."""
    wanted = list(dict.fromkeys(suffixes))
    found: dict[str, list[str]] = {}
    for reference, present in listing.items():
        path, _, name = reference.rpartition("/")
        if name != image or not path or not wanted:
            continue
        tags = list(present)
        per_suffix = [tagged_versions(tags, suffix) for suffix in wanted]
        versions = newest_first(set.intersection(*per_suffix))
        if versions:
            found[path] = versions
    return found


def catalog_versions(tag_oses: Sequence[str]) -> list[str]:
    """The catalog's driver versions known on every one of these OS tags, validated first, newest first."""
    if not tag_oses:
        return []
    per_os = [{c.version for c in driver_versions(tag_os)} for tag_os in tag_oses]
    common = set.intersection(*per_os)
    return [c.version for c in driver_versions(tag_oses[0]) if c.version in common]


def upstream_versions(tags: Iterable[str], tag_oses: Sequence[str]) -> list[str]:
    """Full driver versions tagged for every one of ``tag_oses`` (``580.126.20-ubuntu22.04``), newest first: what
    the Driver step's Catalog offers in upstream mode."""
    tags = list(tags)
    per_os = [tagged_versions(tags, upstream_suffix(tag_os)) for tag_os in tag_oses]
    common = set.intersection(*per_os) if per_os else set()
    return newest_first(common, min_parts=3)  # an upstream image is tagged per full version, never per branch


def pick_upstream_version(versions: Sequence[str], release: str) -> str:
    """Of the versions the registry holds for every node OS (newest first), the one to preselect: the operator
    release's own default driver when it is there, else the newest of a branch the release supports, else ""."""
    from wizard.engine.releases import supported_branches

    supported, default = supported_branches(release)
    if default in versions:
        return default
    return next((v for v in versions if branch_of(v) in supported), "")


def image_tag_of(reference: str) -> str:
    """The tag of an image reference (``TAG`` of ``…/gpu-operator:TAG``), "" without one."""
    name = reference.split("@", 1)[0].rsplit("/", 1)[-1]
    return name.split(":", 1)[1] if ":" in name else ""


def driver_defaults(mode: Mode, tag_oses: Sequence[str], *, operator_image: str = "") -> dict[str, Any]:
    """``driver`` answers a newcomer gets in ``mode`` (upstream's version comes from the registry's tags:
    :func:`pick_upstream_version`)."""
    from wizard.engine.operand_images import operator_registry

    registry = operator_registry(operator_image, image_tag_of(operator_image))
    if mode is Mode.PREINSTALLED:
        return {"operandRegistry": registry} if registry else {}
    source, image = default_source(mode, tag_oses)
    driver: dict[str, Any] = {"source": source, "image": image}
    if registry:  # the operator runs from a private registry: every other image comes from there too
        driver["operandRegistry"] = registry
    versions = catalog_versions(tag_oses) if mode is Mode.PRECOMPILED else []
    if versions:
        driver["version"] = versions[0]
    target = default_target(source, operator_image=operator_image)
    if target:
        driver["repository"] = target
    if len(tag_oses) > 1:
        driver["useNvidiaDriverCRD"] = True  # one driver resource per OS: a ClusterPolicy gives all one OS's image
    return driver


def precompiled_repository(facts: ClusterFacts, release: str, *, operator_image: str = "") -> str:
    """The repository whose tags Mode's recommendation reads before any driver answer exists: where the cluster
    would pull precompiled images from by default (the operator's private registry, else the source), with the
    image (``nvcr.io/nvidia/driver``); "" without GPU nodes or a registry to name. The TUI's Nodes step and
    ``answers init`` list the same one."""
    if not facts.gpu_nodes:
        return ""
    driver = driver_defaults(Mode.PRECOMPILED, facts.os_tags(release), operator_image=operator_image)
    where = str(driver.get("repository") or driver.get("source") or "")
    return image_repository(where, str(driver.get("image") or "driver")) if where else ""


def default_answers(
    facts: ClusterFacts,
    *,
    release: str = "",
    namespace: str = "",
    operator_image: str = "",
    live: Mapping[str, Any] | None = None,
    host_drivers: Mapping[str, str] | None = None,
    mode: Mode | None = None,
    secure_boot: Sequence[str] = (),
    precompiled_tags: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Every answer a newcomer who accepts each default gives, step by step, as the wizard offers them.

    ``live``: the live policy's answers (an upgrade starts from what runs). ``release``: the operator's
    detected release (its line known to gpu-wizard, else the default). A precompiled version comes from the
    catalog for the nodes' OS; the registry the cluster pulls from only where the cluster names one. ``mode``: the
    one the user chose instead of the recommended one (the Mode step's radio button). ``secure_boot`` and
    ``precompiled_tags`` (the pull registry's driver tags, None: not listed) as
    :meth:`~wizard.engine.facts.ClusterFacts.recommend_mode` takes them; a precompiled branch the registry holds
    for every group is the version where the catalog knows none.
    """
    from wizard.engine.releases import bundle_of, default_release

    if live:
        return copy.deepcopy(dict(live))
    try:
        parsed = Release.parse(release)
        known = str(parsed) if bundle_of(parsed) else default_release()
    except ValueError:
        known = default_release()
    mode = mode or Mode(
        facts.recommend_mode(
            host_drivers or {}, secure_boot, precompiled_tags=precompiled_tags, operator_release=known
        ).value
    )
    tag_oses = facts.os_tags(known)
    answers: dict[str, Any] = {"version": 1, "mode": mode.value, "operator": {"version": known}}
    if namespace:
        answers["operator"]["namespace"] = namespace
    driver = driver_defaults(mode, tag_oses, operator_image=operator_image)
    held = facts.precompiled_held(precompiled_tags, known) if precompiled_tags is not None else None
    if mode is Mode.PRECOMPILED and held and not driver.get("version"):
        driver["version"] = tag_version(held[0])  # the branch the registry holds for every group
    if driver:
        answers["driver"] = driver
    answers["toolkit"] = {"installDir": facts.recommend_toolkit_dir().value}
    return answers


@dataclass(frozen=True)
class RegistryOffer:
    """A private registry the Driver step offers for an empty target: where, the version it sets, how much it holds."""

    repository: str
    version: str
    """The version to set with it ("" when one was chosen already)."""
    note: str


def search_answers(answers: Mapping[str, Any]) -> dict[str, Any] | None:
    """Answers to render the tags the nodes need before a target is named: the source stands in for it, and
    a placeholder for a version not chosen yet (the tags' ``-<kernel>-<os>`` suffixes do not depend on it)."""
    driver = dict(answers.get("driver") or {})
    if not driver.get("source") or answers.get("mode") == Mode.PREINSTALLED.value:
        return None
    driver["repository"] = driver["source"]
    driver["version"] = driver.get("version") or "0"
    return {**answers, "driver": driver}


def registry_offers(
    listing: Mapping[str, Iterable[str]],
    image: str,
    version: str,
    groups: Iterable[tuple[str, str, str]],
    precompiled: bool,
) -> list[RegistryOffer]:
    """What the registries listed hold of the images the nodes need (``groups``: (tag, kernel, OS tag) per image),
    best first: with a version, those holding its tags (the most, when none holds all: a mirror to copy the
    rest into); without one (precompiled), those holding a version for every group, with its newest."""
    groups = list(groups)
    tags = {tag for tag, _, _ in groups}
    if version:
        offers = []
        for repository in repositories_holding(listing, image, tags, partial=True):
            have = len(tags & set(listing.get(image_repository(repository, image), [])))
            note = "holds every tag" if have == len(tags) else f"holds {have} of {len(tags)} tags"
            offers.append(RegistryOffer(repository, "", note))
        return offers
    if not precompiled:
        return []
    held = versions_holding(listing, image, {precompiled_suffix(kernel, tag_os) for _, kernel, tag_os in groups})
    return [RegistryOffer(repository, versions[0], "holds every tag") for repository, versions in held.items()]
