"""Warnings and notes about a plan on a given cluster, each with the reason behind it.

Every rule fires only when it applies; the codes are stable (the TUI, the CLI and the tests key on
them). The messages say what will happen and what to do; the reasons say why, citing the
operator behaviour or issue it comes from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from wizard.bundled import asset_data
from wizard.engine.branches import branch_checks
from wizard.engine.defaults import is_public_registry, registry_host
from wizard.engine.exclusion import EXCLUDED, consumer_nodes
from wizard.engine.facts import (
    LABEL_DEPLOY_DRIVER,
    NO_DRIVER_IMAGE_OSES,
    PRECOMPILED_ARCH,
    UNKNOWN_OS_TAG,
    ClusterFacts,
)
from wizard.engine.mirror import MirrorItem, NodeImage, first_gpu_node
from wizard.engine.naming import DIGEST_PREFIX, Release, driver_image, repo_config_dirs
from wizard.engine.node_grammar import quoted
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, Mode, Plan
from wizard.engine.releases import first_release, nearest_rules

#: The first release whose ClusterPolicy path mounts repoConfig by the GPU node's OS, not its own (issue #562).


def _repoconfig_node_os_since() -> Release | None:
    """The first bundled release whose ClusterPolicy takes the OS from the GPU nodes (release.yaml ``gpuNodeOSInfo``)."""
    return first_release(lambda rules: rules.gpuNodeOSInfo)


@dataclass(frozen=True)
class Advice:
    """One warning or note shown with the rendered plan."""

    level: Literal["warning", "note"]
    code: str
    message: str
    reason: str


@dataclass(frozen=True)
class Situation:
    """What every rule reads: the plan, the cluster's nodes, their driver images and the mirror plan."""

    plan: Plan
    facts: ClusterFacts
    images: Sequence[NodeImage]
    mirror: Sequence[MirrorItem]


_LEVELS: dict[str, Literal["warning", "note"]] = {"warning": "warning", "note": "note"}


@cache
def _wording() -> dict[str, dict[str, str]]:
    """``assets/advice/advice.yaml``'s advice: code -> level, message, reason (read once, from its JSON twin)."""
    data = asset_data("advice", "advice.yaml")["advice"]
    return {str(code): {key: str(entry[key]) for key in ("level", "message", "reason")} for code, entry in data.items()}


def worded(code: str, **values: str) -> Advice:
    """The advice ``code`` in the words of ``assets/advice/advice.yaml``, its placeholders filled with ``values``."""
    entry = _wording()[code]
    level = _LEVELS.get(entry["level"])
    if level is None:
        raise ValueError(f"assets/advice/advice.yaml: {code}: level {entry['level']!r} is not warning or note")
    return Advice(level, code, entry["message"].format(**values), entry["reason"].format(**values))


def _names(nodes: Iterable[str], limit: int = 5) -> str:
    names = sorted(nodes)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _outcome(plan: Plan, facts: ClusterFacts, tag: str) -> str:
    """What happens if the operator reads its cluster-wide OS tag from a node with ``tag``."""
    release = plan.operator.version
    others = [n for n in facts.gpu_nodes if n.tag_os(release) not in {tag, UNKNOWN_OS_TAG}]
    images: set[str] = set()
    for node in others:
        try:
            images.add(
                driver_image(
                    precompiled=plan.precompiled,
                    repository=plan.driver.repository,
                    image=plan.driver.image,
                    version=plan.driver.version,
                    kernel=node.kernel,
                    tag_os=tag,
                )
            )
        except ValueError:
            continue  # that node is named unplaced in its own warning
    shown = ", ".join(sorted(images)) or "an image"
    return f"if {tag} wins, {_names(n.name for n in others)} get {shown}, built for another OS"


def _mixed_os(plan: Plan, facts: ClusterFacts, images: Sequence[NodeImage]) -> Advice | None:
    digest = DIGEST_PREFIX in plan.driver.version
    if not plan.driver_enabled or (plan.driver.useNvidiaDriverCRD and not digest):
        return None
    release = plan.operator.version
    by_tag: dict[str, list[str]] = {}
    for node in facts.gpu_nodes:
        if node.tag_os(release) != UNKNOWN_OS_TAG:  # an unplaced node has its own warning
            by_tag.setdefault(node.tag_os(release), []).append(node.name)
    first = first_gpu_node(facts)
    if len(by_tag) < 2 or first is None:
        return None
    groups = "; ".join(f"{tag} on {_names(nodes)}" for tag, nodes in sorted(by_tag.items()))
    if digest:
        message = (
            f"GPU nodes run {len(by_tag)} OS versions ({groups}), but driver.version is a digest: it pins one "
            "image, built for one OS, on every node (a digest gets no OS suffix). Give a version tag instead, "
            "with driver.useNvidiaDriverCRD: true for one driver DaemonSet per OS."
        )
    else:
        outcomes = "; ".join(_outcome(plan, facts, tag) for tag in sorted(by_tag))
        message = (
            f"GPU nodes run {len(by_tag)} OS versions ({groups}). Under ClusterPolicy the operator uses the OS of "
            "one GPU node for every node: the first its informer cache lists, which is not the first by name "
            f"and can change when the operator restarts, so any of them may win: {outcomes}. gpu-wizard's "
            f"image list assumes {first.tag_os(release)} (from {first.name}); when the operator chose another, "
            "verify names the image each driver pod really runs. Set driver.useNvidiaDriverCRD: true to get one "
            "driver DaemonSet per OS."
        )
    if plan.precompiled:
        kernels: dict[str, set[str]] = {}
        for node in facts.gpu_nodes:
            kernels.setdefault(node.kernel, set()).add(f"{node.os_id}{node.os_version}")
        shared = sorted(k for k, oses in kernels.items() if len(oses) > 1)
        if shared:
            message += (
                f" Kernel {', '.join(shared)} appears with several OS versions: the operator stops with "
                "'different OS versions found for the same kernel version'."
            )
    return Advice(
        "warning",
        "mixed-os",
        message,
        "The operator's getGPUNodeOSInfo() takes the OS of the first node labelled nvidia.com/gpu.present=true "
        "that its cached List returns, in no set order (operator issues #2471, #1200), and applies its tag "
        "cluster-wide (#1622, #94, #328); the NVIDIADriver CRD makes a node pool, and a DaemonSet, per OS tag.",
    )


def _repoconfig_unsupported(plan: Plan, facts: ClusterFacts) -> Advice | None:
    if plan.mode is not Mode.UPSTREAM or not plan.driver.repoConfig.configMapName:
        return None
    release = plan.operator.version
    known = repo_config_dirs(release)
    gpu_oses = sorted({n.tag_os(release) for n in facts.gpu_nodes})
    since = _repoconfig_node_os_since()
    if not plan.driver.useNvidiaDriverCRD and not nearest_rules(release).gpuNodeOSInfo:
        return Advice(
            "warning",
            "repoconfig-operator-os",
            f"driver.repoConfig.configMapName is set, but under ClusterPolicy operator {release} picks the folder "
            "the repository files are mounted in from the operator pod's own /etc/os-release, not from the GPU "
            f"nodes' OS ({', '.join(gpu_oses) or 'no GPU nodes yet'}): where the two differ (an apt folder for a "
            "yum node, or the reverse) the driver container never reads the files and installs from the image's "
            f"default repositories. Use operator {since or 'a later release'} or later, or driver.useNvidiaDriverCRD: "
            "true, which mount by each node pool's OS.",
            f"Operator issue #562: {release}'s ClusterPolicy controller reads the OS for its RepoConfigPathMap "
            f"({', '.join(sorted(known))}) from the container it runs in; later releases read the GPU node's NFD labels.",
        )
    bad = sorted({n.tag_os(release) for n in facts.gpu_nodes if n.os_id and n.os_id not in known})
    if not bad:
        return None
    errors = "; ".join(f"repository configuration not supported for distribution {tag}" for tag in bad)
    where = (
        "Those OS pools get their own NVIDIADriver without repoConfig, so they use the image's default "
        "package repositories."
        if plan.driver.useNvidiaDriverCRD
        else "The driver pod fails to start there with the operator's error."
    )
    return Advice(
        "warning",
        "repoconfig-unsupported-os",
        f"driver.repoConfig.configMapName is set but operator {release} cannot mount it on {', '.join(bad)}: "
        f"{errors}. {where}",
        f"Operator {release} mounts repoConfig files only for the distributions in its RepoConfigPathMap "
        f"({', '.join(sorted(known))}); the list grows with the release (v26.3 adds debian, rocky, sles and "
        "sl-micro, v26.7 adds ol), and SLE Micro 5.x (sle-micro) is never among them.",
    )


def _driver_install_dir(plan: Plan, facts: ClusterFacts) -> Advice | None:
    value = plan.hostPaths.driverInstallDir
    if plan.mode is not Mode.PREINSTALLED or not value:
        return None
    gpu = facts.gpu_nodes
    standard = value in {"/", DEFAULT_DRIVER_INSTALL_DIR} or (bool(gpu) and all(n.preinstalled for n in gpu))
    if not standard:
        return None
    return Advice(
        "note",
        "driverinstalldir-not-needed",
        f"hostPaths.driverInstallDir is set to {value}, which a standard pre-installed driver does not need; "
        "leave it unset unless the driver lives under a non-standard root (Talos /usr/local/glibc, GKE).",
        "The validator first runs nvidia-smi through chroot /host and finds a host driver in / on its own; "
        "driverInstallDir only re-points the driver-install-dir mount and DRIVER_INSTALL_DIR of the operands "
        "(its default /run/nvidia/driver is where the containerized driver goes).",
    )


def _unplaced(facts: ClusterFacts, images: Sequence[NodeImage]) -> Advice | None:
    by_reason: dict[str, list[str]] = {}
    for entry in images:
        if entry.unplaced:
            by_reason.setdefault(entry.unplaced, []).append(entry.node)
    if not by_reason:
        return None
    nfd = any(n.nfd_labelled for n in facts.nodes)
    reasons = "; ".join(f"{_names(nodes)}: {reason}" for reason, nodes in sorted(by_reason.items()))
    if nfd:
        consequence = (
            "The operator reads a node's kernel and OS only from Node Feature Discovery labels, so it runs no "
            "driver pod there (and under ClusterPolicy, when the GPU node it reads the cluster-wide OS from lacks "
            "them, and any GPU node may be that one, it cannot reconcile the driver at all). "
            "Fix: make sure an nfd-worker pod runs on those nodes with its kernel and system sources enabled, "
            "wait for the labels, then render again."
        )
    else:
        consequence = (
            "NFD is not running yet, so this is from status.nodeInfo, which does not say it either; once the "
            "operator's NFD labels the nodes the operator reads the labels. Fix: render again after NFD has "
            "labelled the nodes (it comes with the operator), or check the node's OS and kernel."
        )
    return Advice(
        "warning",
        "node-unplaced",
        f"No driver image can be predicted for {reasons}. {consequence}",
        "The operator builds the image tag from feature.node.kubernetes.io/kernel-version.full and "
        "system-os_release.ID/VERSION_ID; gpu-wizard never renders an image with an empty kernel or an "
        "'-unknown' OS.",
    )


def _predicted(facts: ClusterFacts, images: Sequence[NodeImage]) -> Advice | None:
    if any(n.nfd_labelled for n in facts.nodes) or not any(entry.image for entry in images):
        return None
    return Advice(
        "note",
        "predicted-from-nodeinfo",
        "No node carries Node Feature Discovery labels yet, so the images are a prediction from each node's "
        "status.nodeInfo (kernelVersion, osImage). Render again once the operator's NFD has labelled the "
        "nodes to confirm them.",
        "The operator reads only NFD labels; before NFD runs they are absent everywhere, and the kubelet's "
        "nodeInfo reports the same kernel (uname -r) and OS release NFD will label.",
    )


def _os_without_image(plan: Plan, facts: ClusterFacts) -> Advice | None:
    if not plan.driver_enabled or plan.mode is Mode.PREINSTALLED:
        return None
    by_os: dict[str, list[str]] = {}
    for node in facts.gpu_nodes:
        if node.os_id in NO_DRIVER_IMAGE_OSES:
            by_os.setdefault(node.os_id, []).append(node.name)
    if not by_os:
        return None
    found = "; ".join(f"{NO_DRIVER_IMAGE_OSES[os_id]} on {_names(nodes)}" for os_id, nodes in sorted(by_os.items()))
    return Advice(
        "warning",
        "os-without-driver-image",
        f"No driver container exists for these OSes in {plan.mode.value} mode or any other: {found}. Their "
        "driver pods would fail with ErrImagePull. Install the driver with the OS itself and use the "
        "pre-installed mode (or label those nodes nvidia.com/gpu.deploy.driver=false).",
        "NVIDIA publishes upstream driver images for Ubuntu, RHEL, RHCOS and a few others, precompiled ones "
        "for Ubuntu (SUSE for SLE Micro); Bottlerocket, Talos, Flatcar, COS and Amazon Linux carry the driver "
        "in the host image or a system extension instead.",
    )


def _architecture(plan: Plan, facts: ClusterFacts, mirror: Sequence[MirrorItem]) -> Advice | None:
    if not plan.driver_enabled or plan.mode is Mode.PREINSTALLED:
        return None
    by_arch: dict[str, list[str]] = {}
    for node in facts.gpu_nodes:
        if node.arch and node.arch != PRECOMPILED_ARCH:
            by_arch.setdefault(node.arch, []).append(node.name)
    if not by_arch:
        return None
    found = "; ".join(f"{quoted(arch)} on {_names(nodes)}" for arch, nodes in sorted(by_arch.items()))
    if plan.precompiled:
        return Advice(
            "warning",
            "precompiled-amd64-only",
            f"GPU nodes that are not amd64: {found}. Precompiled driver images are built for x86_64 only, so "
            "their driver pods fail (no image for their platform). Use the upstream mode for them (with "
            "driver.useNvidiaDriverCRD: true, one NVIDIADriver per node pool) or a host driver.",
            "NVIDIA's precompiled driver documentation limits precompiled containers to the x86_64 architecture.",
        )
    if set(by_arch) == {"arm64"} and not mirror:
        return None
    copy = (
        " The mirror script copies every platform (skopeo copy --all); its docker fallback copies only the "
        "platform of the machine it runs on, so run that from an arm64 host or not at all."
        if mirror
        else ""
    )
    return Advice(
        "warning" if set(by_arch) - {"arm64"} else "note",
        "gpu-node-architecture",
        f"GPU nodes that are not amd64: {found}. NVIDIA's driver images exist for amd64 and arm64 only; check "
        f"that the image has a variant for each of these platforms.{copy}",
        "A container image index lists one manifest per platform; a node pulls the one for its own "
        "kubernetes.io/arch, and fails when there is none.",
    )


def _unpublished(plan: Plan, mirror: Sequence[MirrorItem], images: Sequence[NodeImage]) -> list[Advice]:
    """A precompiled image no source is known to hold (the catalog lists its OS's tuples, not this kernel's)."""
    if not plan.precompiled:
        return []
    from wizard.engine.catalog import unpublished

    out: list[Advice] = []
    by_image: dict[str, list[NodeImage]] = {}
    for entry in images:
        if entry.image:
            by_image.setdefault(entry.image, []).append(entry)
    for image, entries in sorted(by_image.items()):
        first = entries[0]
        if not unpublished(plan.driver.version, first.kernel, first.tag_os):
            continue
        out.append(
            Advice(
                "warning",
                "tuple-unpublished",
                f"No published precompiled driver {plan.driver.version} is known for kernel {first.kernel} "
                f"({first.tag_os}) on {_names(e.node for e in entries)}: {image} is not in the catalog, so no source "
                f"is known to hold it and its nodes get no driver (ImagePullBackOff). Check: gpu-wizard check-kernel "
                f"{first.kernel} (the request to send the image's vendor, or the recipe to build it), or move these "
                "nodes to a kernel with a published image.",
                "Precompiled images are built per kernel; the catalog (assets/catalog.yaml) lists the tuples "
                f"published for {first.tag_os}, and a kernel update can run ahead of the image build (operator "
                "issue #910).",
            )
        )
    return out


def _nfd_disagrees(facts: ClusterFacts) -> Advice | None:
    found: list[str] = []
    for node in sorted(facts.gpu_nodes, key=lambda n: n.name):
        nfd_os = f"{node.os_id}{node.os_version}"
        if node.kernel_source == "nfd" and node.info_kernel and node.info_kernel != node.kernel:
            found.append(f"{node.name} kernel: NFD {quoted(node.kernel)}, nodeInfo {quoted(node.info_kernel)}")
        if node.os_source == "nfd" and node.info_os and node.info_os != nfd_os:
            found.append(f"{node.name} OS: NFD {quoted(nfd_os)}, nodeInfo {quoted(node.info_os)}")
    if not found:
        return None
    shown = "; ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return Advice(
        "warning",
        "nfd-disagrees",
        f"Node Feature Discovery labels and the kubelet's nodeInfo disagree ({shown}). The images follow the NFD "
        "labels, as the operator does; if a node was just upgraded or rebooted, wait until NFD relabels it "
        "(its default interval is 60 s) and render again, else check the nfd-worker pod on that node.",
        "The operator selects and tags driver images by the NFD labels only; stale or hand-set labels "
        "give an image built for another kernel or OS, whose module will not load.",
    )


def _upstream(s: Situation) -> Advice | None:
    return worded("upstream-not-validated") if s.plan.mode is Mode.UPSTREAM else None


def _airgapped_without_repoconfig(s: Situation) -> Advice | None:
    plan = s.plan
    if plan.mode is Mode.UPSTREAM and plan.driver.airgapped and not plan.driver.repoConfig.configMapName:
        return worded("airgapped-no-repoconfig")
    return None


def _branches(s: Situation) -> list[Advice]:
    checks = branch_checks(s.plan, tag_oses=s.facts.os_tags(s.plan.operator.version))
    return [worded(check.check, message=check.message, hint=check.hint) for check in checks]


def _image_whitelist(s: Situation) -> Advice | None:
    return worded("image-whitelist", targets=", ".join(item.target for item in s.mirror)) if s.mirror else None


def _no_gpu_nodes(s: Situation) -> Advice | None:
    return None if s.facts.gpu_nodes else worded("no-gpu-nodes")


@dataclass(frozen=True)
class Rule:
    """One advice rule: the codes it may give, and when (its check says nothing where it does not apply)."""

    codes: tuple[str, ...]
    check: Callable[[Situation], Advice | Iterable[Advice] | None]


RULES: tuple[Rule, ...] = (
    Rule(("mixed-os",), lambda s: _mixed_os(s.plan, s.facts, s.images)),
    Rule(("upstream-not-validated",), _upstream),
    Rule(("airgapped-no-repoconfig",), _airgapped_without_repoconfig),
    Rule(("driver-branch-unsupported", "driver-downgrade"), _branches),
    Rule(("repoconfig-operator-os", "repoconfig-unsupported-os"), lambda s: _repoconfig_unsupported(s.plan, s.facts)),
    Rule(("tuple-unpublished",), lambda s: _unpublished(s.plan, s.mirror, s.images)),
    Rule(("image-whitelist",), _image_whitelist),
    Rule(("driverinstalldir-not-needed",), lambda s: _driver_install_dir(s.plan, s.facts)),
    Rule(("geforce-licence", "consumer-excluded"), lambda s: _consumer_gpus(s.plan, s.facts)),
    Rule(("driver-outside-operand-registry", "operands-from-public-registry"), lambda s: _operand_registry(s.plan)),
    # the GPU nodes themselves: unplaceable, unsupported OS or architecture, stale labels
    Rule(("node-unplaced",), lambda s: _unplaced(s.facts, s.images)),
    Rule(("predicted-from-nodeinfo",), lambda s: _predicted(s.facts, s.images)),
    Rule(("os-without-driver-image",), lambda s: _os_without_image(s.plan, s.facts)),
    Rule(("precompiled-amd64-only", "gpu-node-architecture"), lambda s: _architecture(s.plan, s.facts, s.mirror)),
    Rule(("nfd-disagrees",), lambda s: _nfd_disagrees(s.facts)),
    Rule(("no-gpu-nodes",), _no_gpu_nodes),
)
"""Every advice rule, in the order its advice is shown."""


def advise(plan: Plan, facts: ClusterFacts, images: Sequence[NodeImage], mirror: Sequence[MirrorItem]) -> list[Advice]:
    """Every warning and note that applies to this plan on these nodes, in a fixed order (:data:`RULES`')."""
    situation = Situation(plan, facts, images, mirror)
    out: list[Advice] = []
    for rule in RULES:
        found = rule.check(situation)
        out += [found] if isinstance(found, Advice) else list(found or ())
    return out


def _consumer_gpus(plan: Plan, facts: ClusterFacts) -> list[Advice]:
    """GeForce/TITAN nodes: the licence finding with its action (keep them out of the driver rollout), or a note
    once the plan does."""
    consumer = consumer_nodes(facts.gpu_nodes)
    if not consumer:
        return []
    excluded = set(plan.driver.excludeNodes) if plan.driver_enabled else set()
    left = {name: product for name, product in consumer.items() if name not in excluded}
    licence = (
        "The operator's driver containers carry NVIDIA's data-center driver, supported on data-center "
        "GPUs; the GeForce/TITAN software licence excludes data-center use (blockchain processing aside)."
    )
    if not left:
        return [
            Advice(
                "note",
                "consumer-excluded",
                f"{_names(consumer)} ({', '.join(sorted(set(consumer.values())))}) kept out of the driver rollout: the "
                f"apply labels {'them' if len(consumer) > 1 else 'it'} {LABEL_DEPLOY_DRIVER}={EXCLUDED}. The other "
                "operands there (toolkit, device plugin, validator) use a driver installed on the host: without one "
                "they wait and the ClusterPolicy stays notReady (to take a node out of the GPU Operator entirely, "
                "label it nvidia.com/gpu.deploy.operands=false).",
                licence + " The operator keeps an admin's non-empty deploy label, and its driver DaemonSets select "
                f"{LABEL_DEPLOY_DRIVER}=true only.",
            )
        ]
    keep = sorted({*excluded, *left})
    action = (
        f" Keep {'them' if len(left) > 1 else 'it'} out of the driver rollout: driver.excludeNodes: "
        f"[{', '.join(keep)}] (the apply labels {LABEL_DEPLOY_DRIVER}={EXCLUDED}; a rollback undoes it)."
        if plan.driver_enabled
        else ""
    )
    return [
        Advice(
            "warning",
            "geforce-licence",
            f"{', '.join(sorted(set(left.values())))} on {_names(left)}: GeForce/TITAN consumer GPUs are not supported "
            "by the GPU Operator, and NVIDIA's GeForce driver licence does not permit data-center deployment." + action,
            licence,
        )
    ]


def _operand_registry(plan: Plan) -> Advice | None:
    """The driver and the other images apart: one from a private registry, the rest from the chart's public ones."""
    driver = plan.driver
    registry = driver.operandRegistry
    if registry and plan.driver_enabled and driver.repository:
        if registry_host(driver.repository) != registry_host(registry):
            return Advice(
                "warning",
                "driver-outside-operand-registry",
                f"The driver is pulled from {driver.repository}, every other image from {registry}: the cluster "
                f"must reach both.",
                "driver.operandRegistry maps the operator's other images into one private registry; the driver "
                "keeps its own driver.repository.",
            )
        return None
    # Said where the answers call the nodes air-gapped: a private driver registry alone is common on clusters
    # that reach nvcr.io (the running operator's private registry fills driver.operandRegistry by default).
    private_driver = plan.driver_enabled and driver.repository and not is_public_registry(driver.repository)
    if registry or not driver.airgapped or not private_driver or "nvcr.io" in driver.registryMirrors:
        return None
    return Advice(
        "warning",
        "operands-from-public-registry",
        f"The driver comes from the private registry {driver.repository}, but the driver manager, toolkit, device "
        "plugin, validator and the other operands keep the chart's public registries (nvcr.io, registry.k8s.io): "
        f"a cluster that cannot reach them never becomes ready. Set driver.operandRegistry "
        f"(e.g. {registry_host(driver.repository)}) to pull every image from there, or driver.registryMirrors "
        "if the nodes' runtime pulls through a mirror.",
        "The ClusterPolicy names each operand's image; the chart's defaults point at NVIDIA's public registries.",
    )


def advice_text(advice: Iterable[Advice]) -> str:
    """Plain-text listing: ``LEVEL code: message`` then an indented ``reason:`` line per entry."""
    return "".join(f"{a.level} {a.code}: {a.message}\n    reason: {a.reason}\n" for a in advice)
