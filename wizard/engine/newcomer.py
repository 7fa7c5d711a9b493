"""The answers a newcomer gets by pressing Next through the wizard, with the reason for each choice.

``gpu-wizard answers init`` on a cluster writes them; the TUI's steps take the same defaults from the same rules
(:mod:`wizard.engine.defaults`: :func:`~wizard.engine.defaults.default_answers` for the mode, the release, the
image source, the catalog version, the target and the toolkit folder; the Driver step's
:func:`~wizard.engine.defaults.pick_upstream_version` over :func:`~wizard.engine.defaults.upstream_versions` for
upstream's version; :func:`~wizard.engine.defaults.registry_offers` for an empty target, the registry a newcomer
takes with "Use"). This module only adds the words: why each value, as comments in the file.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from wizard.engine.defaults import (
    NVIDIA_REGISTRY,
    SLE_MICRO_SOURCE,
    RegistryOffer,
    default_answers,
    pick_upstream_version,
    upstream_versions,
)
from wizard.engine.facts import ClusterFacts
from wizard.engine.modes import Mode

__all__ = ["NewcomerInputs", "newcomer_answers", "newcomer_yaml"]


@dataclass(frozen=True)
class NewcomerInputs:
    """What the cluster told, as the TUI's steps read it."""

    facts: ClusterFacts
    release: str = ""
    """The operator release running in the cluster ("" when none was detected)."""
    namespace: str = ""
    operator_image: str = ""
    live: Mapping[str, Any] | None = None
    """The live ClusterPolicy's answers (an upgrade starts from what runs)."""
    mode: Mode | None = None
    """A mode chosen instead of the recommended one (``--mode``)."""
    host_drivers: Mapping[str, str] = field(default_factory=dict)
    """What the Mode step's host check found: node -> the host driver's version ("" for none)."""
    upstream_tags: Sequence[str] | None = None
    """Upstream: the tags the Driver step lists from the target (else the source); None when not listed."""
    tags_from: str = ""
    offers: Sequence[RegistryOffer] = field(default_factory=tuple)
    """For an empty target: the registries found holding the nodes' tags, best first (the Driver step's offers)."""
    secure_boot: Sequence[str] = ()
    """GPU nodes the host check found with Secure Boot on."""
    precompiled_tags: Sequence[str] | None = None
    """The tags the pull registry's driver repository holds (None: not listed); the Mode step takes the same."""


def newcomer_answers(given: NewcomerInputs) -> tuple[dict[str, Any], dict[str, str]]:
    """(answers, why): every default a newcomer accepts, and the reason per dotted key (``driver.version``)."""
    facts = given.facts
    answers = default_answers(
        facts,
        release=given.release,
        namespace=given.namespace,
        operator_image=given.operator_image,
        live=given.live,
        host_drivers=given.host_drivers,
        mode=given.mode,
        secure_boot=given.secure_boot,
        precompiled_tags=given.precompiled_tags,
    )
    why: dict[str, str] = {}
    if given.live:
        why["mode"] = "the live ClusterPolicy's answers: what runs now, the starting point of any change"
        return answers, why
    release = answers["operator"]["version"]
    mode = Mode(answers["mode"])
    recommended = facts.recommend_mode(
        given.host_drivers, given.secure_boot, precompiled_tags=given.precompiled_tags, operator_release=release
    )
    why["mode"] = (
        f"chosen with --mode (recommended: {recommended.value}: {recommended.reason})"
        if given.mode is not None and given.mode.value != recommended.value
        else f"recommended: {recommended.reason}"
    )
    why["operator.version"] = (
        f"the operator release running in the cluster ({given.release})"
        if given.release and given.release.lstrip("v") in release
        else "the newest release gpu-wizard knows (no operator release it knows runs in the cluster)"
    )
    if "namespace" in answers["operator"]:
        why["operator.namespace"] = "where the operator runs now"
    why["toolkit.installDir"] = facts.recommend_toolkit_dir().reason
    driver: dict[str, Any] = answers.get("driver") or {}
    if not driver:
        return answers, why
    tag_oses = facts.os_tags(release)
    source = str(driver.get("source") or "")
    if source == SLE_MICRO_SOURCE[0]:
        why["driver.source"] = "every GPU node runs SLE Micro: its precompiled images are published there"
    elif source == NVIDIA_REGISTRY and mode is Mode.UPSTREAM:
        why["driver.source"] = "NVIDIA's registry, where its upstream driver images are published"
    elif source == NVIDIA_REGISTRY:
        why["driver.source"] = f"NVIDIA publishes its precompiled images ({', '.join(tag_oses)}) there"
    held = facts.precompiled_held(given.precompiled_tags, release) if given.precompiled_tags is not None else None
    if mode is Mode.PRECOMPILED and held and driver.get("version") == held[0].split("-", 1)[0]:
        why["driver.version"] = f"the branch the registry holds a precompiled image of for every group ({held[0]}…)"
    elif mode is Mode.PRECOMPILED and driver.get("version"):
        why["driver.version"] = f"the catalog's best version for {', '.join(tag_oses)} (assets/catalog.yaml)"
    elif mode is Mode.PRECOMPILED:
        why["driver.version"] = (
            f"required: the catalog knows no version for {', '.join(tag_oses) or 'these nodes'}; give the branch "
            "(e.g. 580) or version the registry holds for every node's kernel"
        )
    if mode is Mode.UPSTREAM and not driver.get("version") and given.upstream_tags is None:
        where = given.tags_from or "the registry"
        why["driver.version"] = f"required: {where} could not be listed here; give a full version (e.g. 580.126.20)"
    if mode is Mode.UPSTREAM and not driver.get("version") and given.upstream_tags is not None:
        versions = upstream_versions(given.upstream_tags, tag_oses)
        picked = pick_upstream_version(versions, release)
        if picked:
            driver["version"] = picked
            why["driver.version"] = f"tagged for every node OS in {given.tags_from}, on a branch {release} supports"
        else:
            why["driver.version"] = f"none: no version in {given.tags_from} is tagged for every node OS; type one"
    if driver.get("repository"):
        if driver["repository"] == source:
            why["driver.repository"] = "the cluster pulls from the source itself (the operator's images come from it)"
        else:
            why["driver.repository"] = "the private registry the operator's own image comes from (a mirror)"
    elif given.offers:
        offer = given.offers[0]
        driver["repository"] = offer.repository
        if offer.version and not driver.get("version"):
            driver["version"] = offer.version
        why["driver.repository"] = (
            f"found on the cluster's registries: it {offer.note} (the Driver step's 'Use {offer.repository}')"
        )
    else:
        why["driver.repository"] = (
            "required: name the registry the nodes pull from (no private registry holding the tags was found)"
        )
    if driver.get("useNvidiaDriverCRD"):
        why["driver.useNvidiaDriverCRD"] = f"the GPU nodes run {len(tag_oses)} OSes: one driver resource per OS"
    return answers, why


def newcomer_yaml(answers: Mapping[str, Any], why: Mapping[str, str], notes: Sequence[str] = ()) -> str:
    """The answers file: a header, each key with its reason as the comment above it, then ``notes`` (what the
    file leaves to the cluster, such as the container runtime and pull secrets)."""
    doc = _commented(answers, why, "", 0)
    unset = [f"{path}: {text}" for path, text in why.items() if not _has(answers, path)]  # why it is not there
    header = [
        "gpu-wizard answers file (format version 1): the defaults the wizard offers on this cluster,",
        "each with the reason it was chosen. Check with: gpu-wizard apply --answers THIS_FILE --dry-run",
    ]
    doc.yaml_set_start_comment("\n".join(header))
    buffer = io.StringIO()
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.dump(doc, buffer)
    tail = "".join(f"# {line}\n" for line in [*unset, *notes])
    return buffer.getvalue() + tail


def _has(data: Mapping[str, Any], path: str) -> bool:
    head, _, rest = path.partition(".")
    if head not in data:
        return False
    return not rest or (isinstance(data[head], Mapping) and _has(data[head], rest))


def _commented(data: Mapping[str, Any], why: Mapping[str, str], prefix: str, indent: int) -> CommentedMap:
    node = CommentedMap()
    for key, value in data.items():
        path = f"{prefix}{key}"
        node[key] = _commented(value, why, f"{path}.", indent + 2) if isinstance(value, Mapping) else value
        if path in why:
            node.yaml_set_comment_before_after_key(key, before=why[path], indent=indent)
    return node
