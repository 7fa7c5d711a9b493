"""Every image a plan makes the cluster pull besides the driver's, and where each one is pulled from.

The release's chart names them (release.yaml ``images``, :mod:`wizard.engine.releases`): the operator, the
validator, the driver manager, the toolkit, the device plugin, GFD, DCGM and its exporter, the MIG manager,
NFD, and the sandbox/vGPU operands. A plan pulls those whose switches are on in its ClusterPolicy (or, for
what the policy does not hold, such as NFD, in the chart's values). With ``driver.operandRegistry`` each
maps into that private registry, keeping its path below the public host
(``nvcr.io/nvidia/k8s/container-toolkit`` -> ``REGISTRY/nvidia/k8s/container-toolkit``), so an air-gapped
plan names no image outside it; without it, the chart's public references stand (a runtime mirror,
``driver.registryMirrors``, may still serve them). The driver's own images are per node
(:mod:`wizard.engine.mirror`); :func:`image_list` joins both for the image-list outputs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from wizard.bundled import operator_values
from wizard.engine import releases
from wizard.engine.naming import image_path, image_repository
from wizard.engine.plan import Plan
from wizard.engine.releases import ChartImage

__all__ = [
    "DRIVER_COMPONENT",
    "OperandImage",
    "adopted_registry",
    "image_list",
    "live_operand_registry",
    "operand_images",
    "operator_registry",
    "policy_repositories",
    "private_repository",
    "release_images",
    "values_repositories",
    "with_live_registry",
    "with_operator_registry",
]

#: The release.yaml component whose image is the plan's own driver (per node), not the chart's.
DRIVER_COMPONENT = "driver"
#: The Helm values key of the node-feature-discovery subchart.
NFD_VALUES = "node-feature-discovery"


@dataclass(frozen=True)
class OperandImage:
    """One image the cluster pulls for a plan: the components using it, the reference, and where it comes from."""

    components: tuple[str, ...]
    reference: str
    """What the cluster pulls (in the private registry when the plan names one)."""
    source: str
    """The chart's public reference it is copied from (equal to ``reference`` when nothing maps it)."""

    @property
    def mirrored(self) -> bool:
        """The image is copied from elsewhere into the registry the cluster pulls from."""
        return self.source != self.reference


def private_repository(repository: str, registry: str) -> str:
    """``repository`` (``nvcr.io/nvidia/k8s``) under ``registry`` (``harbor.corp.example``): the host replaced, the
    path kept (``harbor.corp.example/nvidia/k8s``); unchanged without a registry."""
    if not registry:
        return repository
    _, _, path = repository.partition("/")
    return f"{registry}/{path}" if path else registry


def operator_registry(operator_image: str, release: str) -> str:
    """The private registry a running operator's image names, as ``driver.operandRegistry`` reads it; ``""`` when
    the image is the chart's own registry or its path does not end as the chart's does.

    ``harbor.corp.example/nvidia/gpu-operator:<tag>`` with the chart's ``nvcr.io/nvidia/gpu-operator`` gives
    ``harbor.corp.example``: the operator's path below the registry is the chart's.
    """
    parsed = releases.Release.parse_or_none(release) if release else None
    bundle = (releases.bundle_of(parsed) if parsed else None) or releases.default_release()  # the newest's layout
    if not operator_image:
        return ""
    chart = next((i for i in releases.rules(bundle).images if i.component == "gpu-operator"), None)
    if chart is None:
        return ""
    name = operator_image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if len(last) == 2 and ":" in last[1]:
        name = f"{last[0]}/{last[1].split(':', 1)[0]}"
    chart_host, _, chart_path = image_repository(chart.repository, chart.image).partition("/")
    if not name.endswith("/" + chart_path):
        return ""
    registry = name[: -len(chart_path) - 1]
    return "" if registry.split("/", 1)[0] == chart_host else registry


def chart_reference(image: ChartImage) -> str:
    """A chart image's ``repository/image:version`` (as the release's chart values name it)."""
    return image_path(image.repository, image.image, image.version)


def _lookup(tree: Mapping[str, Any], path: str) -> Any:
    node: Any = tree
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _switched_on(path: str, spec: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """A switch as the operator reads it: the ClusterPolicy's value, else the chart's (NFD, the GPUCluster CR)."""
    found = _lookup(spec, path)
    if found is None:
        found = _lookup(values, path)
    return found is True or (isinstance(found, str) and found.lower() == "true")


def release_images(bundle: str) -> list[str]:
    """Every distinct image the release's chart names, sorted: the operator's own image list for the release
    (the driver at the chart's default version, without an OS suffix)."""
    return sorted({chart_reference(image) for image in releases.rules(bundle).images})


def operand_images(plan: Plan, policy_spec: Mapping[str, Any]) -> list[OperandImage]:
    """The images other than the driver's that ``plan``'s ClusterPolicy (``policy_spec``) makes the cluster pull,
    by reference (components sharing one image listed together), in the release's order."""
    bundle = plan.operator.bundle
    values = operator_values(bundle)
    registry = plan.driver.operandRegistry
    by_reference: dict[str, tuple[list[str], str]] = {}
    for image in releases.rules(bundle).images:
        if image.component == DRIVER_COMPONENT:
            continue
        if not all(_switched_on(path, policy_spec, values) for path in image.enabled):
            continue
        target = image_path(private_repository(image.repository, registry), image.image, image.version)
        components, _ = by_reference.setdefault(target, ([], chart_reference(image)))
        components.append(image.component)
    return [OperandImage(tuple(c), reference, source) for reference, (c, source) in by_reference.items()]


def image_list(driver_images: Iterable[str], operands: Iterable[OperandImage]) -> list[str]:
    """Every distinct image the cluster pulls for a plan, sorted: the driver's (per node) and the operands'."""
    return sorted({*(image for image in driver_images if image), *(o.reference for o in operands)})


def with_operator_registry(plan: Plan, operator_image: str) -> Plan:
    """``plan`` with ``driver.operandRegistry`` the running operator's private registry (:func:`operator_registry`)
    when the answers name none and the nodes' runtime does not reach nvcr.io through a mirror; else ``plan`` itself.

    A cluster that pulls its operator from a private registry pulls the operands from there too: the chart's
    public defaults would leave them unreachable.
    """
    if plan.driver.operandRegistry or "nvcr.io" in plan.driver.registryMirrors:
        return plan
    registry = operator_registry(operator_image, plan.operator.version)
    if not registry:
        return plan
    data = plan.answers_dict()
    data["driver"]["operandRegistry"] = registry
    return Plan.model_validate(data)


def with_live_registry(plan: Plan, operator_image: str, live_spec: Mapping[str, Any] | None) -> tuple[Plan, str]:
    """``plan`` with the ``driver.operandRegistry`` the cluster already pulls its operands from, and why (``""`` and
    ``plan`` itself when the answers name one or nothing says so).

    First the live ClusterPolicy's (:func:`live_operand_registry`): a plan naming no registry does not own the
    policy's image repositories, so the live ones stay what the cluster pulls; a plan listing the chart's public
    images over them would name images the cluster never pulls and call the write "no changes". Else the running
    operator's (:func:`with_operator_registry`). Answers that want the public images back name
    ``operandRegistry: nvcr.io``.
    """
    if plan.driver.operandRegistry:
        return plan, ""
    registry, why = adopted_registry(plan.driver.registryMirrors, operator_image, plan.operator.version, live_spec)
    if not registry:
        return plan, ""
    data = plan.answers_dict()
    data["driver"]["operandRegistry"] = registry
    return Plan.model_validate(data), why


def adopted_registry(
    mirrors: Mapping[str, str], operator_image: str, release: str, live_spec: Mapping[str, Any] | None
) -> tuple[str, str]:
    """The ``driver.operandRegistry`` answers naming none take on a cluster, and why; ``("", "")`` for none (the
    rule of :func:`with_live_registry`, for the front ends that hold answers rather than a plan)."""
    live = live_operand_registry(live_spec, release) if live_spec else ""
    if live:
        return live, "the live ClusterPolicy's operands come from it"
    if "nvcr.io" in mirrors:  # the nodes' runtime reaches the public images through a mirror
        return "", ""
    registry = operator_registry(operator_image, release)
    return (registry, "the operator runs from it") if registry else ("", "")


def live_operand_registry(spec: Mapping[str, Any], release: str) -> str:
    """The private registry a live ClusterPolicy's operands come from (``driver.operandRegistry`` of a plan read back
    from it): the toolkit's, device plugin's or validator's repository with the chart's path below it; ``""`` when
    they are the chart's own or laid out otherwise."""
    bundle = releases.bundle_of(release) or releases.default_release()
    for image in releases.rules(bundle).images:
        if image.component not in ("toolkit", "device-plugin", "validator"):
            continue
        live = _lookup(spec, f"{image.values}.repository")
        chart_host, _, chart_path = image.repository.partition("/")
        if not isinstance(live, str) or not live.endswith("/" + chart_path):
            continue
        registry = live[: -len(chart_path) - 1]
        if registry.split("/", 1)[0] != chart_host:
            return registry
    return ""


Path = tuple[str, ...]
KATA_RUNTIME_CLASSES: Path = ("kataManager", "config", "runtimeClasses")
"""Where a release's kata manager (v25.10) names the kata artifacts it pulls (``artifacts.url``, an OCI reference)."""


def _chart_repositories(bundle: str) -> list[tuple[Path, ChartImage]]:
    """``(values path of a repository, the image)`` of every image the release's chart names but the driver's (one
    entry per place: an image shared by two components is listed at each)."""
    return [
        ((*image.values.split("."), "repository"), image)
        for image in releases.rules(bundle).images
        if image.component != DRIVER_COMPONENT
    ]


def _kata_runtime_classes(section: Any, registry: str) -> list[Any] | None:
    """The kata manager's runtime classes with each artifact reference in ``registry``; None when there are none."""
    classes = ((section or {}).get("config") or {}).get("runtimeClasses") if isinstance(section, Mapping) else None
    if not isinstance(classes, list) or not classes:
        return None
    out = copy.deepcopy(classes)
    for entry in out:
        artifacts = entry.get("artifacts") if isinstance(entry, dict) else None
        if isinstance(artifacts, dict) and artifacts.get("url"):
            artifacts["url"] = private_repository(str(artifacts["url"]), registry)
    return out


def policy_repositories(plan: Plan, chart_spec: Mapping[str, Any], *, skip_driver: bool) -> list[tuple[Path, Any]]:
    """Every operand image's ``repository`` in the ClusterPolicy (``chart_spec``: the chart's), in
    ``driver.operandRegistry``: the ClusterPolicy fields the wizard then owns.

    Every section the chart's policy holds an image in (enabled or not: a switch turned on later must not pull
    from a registry the cluster cannot reach); ``skip_driver``: the driver section is the NVIDIADriver CRs' (its
    manager there follows the registry in :mod:`wizard.engine.render_nvidiadriver`).
    """
    registry = plan.driver.operandRegistry
    owned: list[tuple[Path, Any]] = []
    for path, image in _chart_repositories(plan.operator.bundle):
        section = _lookup(chart_spec, ".".join(path[:-1]))
        if not isinstance(section, Mapping) or "repository" not in section:
            continue  # not in the ClusterPolicy (the operator's Deployment, NFD, the GPUCluster's DRA driver)
        if path[0] == "driver" and skip_driver:
            continue
        owned.append((path, private_repository(image.repository, registry)))
    classes = _kata_runtime_classes(chart_spec.get("kataManager"), registry)
    if classes is not None:
        owned.append((KATA_RUNTIME_CLASSES, classes))
    return owned


def values_repositories(plan: Plan, chart_values: Mapping[str, Any]) -> list[tuple[Path, Any]]:
    """The Helm values putting every image of the chart (the operator's and NFD's included) in
    ``driver.operandRegistry``."""
    registry = plan.driver.operandRegistry
    out: list[tuple[Path, Any]] = []
    for path, image in _chart_repositories(plan.operator.bundle):
        repository = private_repository(image.repository, registry)
        # the NFD subchart's repository names the image too
        out.append((path, image_repository(repository, image.image) if path[0] == NFD_VALUES else repository))
    classes = _kata_runtime_classes(chart_values.get("kataManager"), registry)
    if classes is not None:
        out.append((KATA_RUNTIME_CLASSES, classes))
    return out
