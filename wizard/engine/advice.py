"""Warnings and notes about a plan on a given cluster, each with the reason behind it.

Every rule fires only when it applies; the codes are stable (the TUI, the CLI and the tests key on
them). The messages say what will happen and what to do; the reasons say why, citing the
operator behaviour or issue it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from wizard.engine.facts import ClusterFacts
from wizard.engine.mirror import MirrorItem, NodeImage, first_gpu_node
from wizard.engine.naming import DIGEST_PREFIX
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, Mode, Plan
from wizard.engine.render_policy import REPOCONFIG_OS_IDS

#: Consumer products: GeForce, TITAN and GeForce RTX model numbers (RTX 3080, RTX-4090, ...).
CONSUMER_GPU_RE = re.compile(r"geforce|titan|\brtx[-_ ]?\d{2}[5-9]0(?!\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Advice:
    """One warning or note shown with the rendered plan."""

    level: Literal["warning", "note"]
    code: str
    message: str
    reason: str


def _names(nodes: Iterable[str], limit: int = 5) -> str:
    names = sorted(nodes)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _mixed_os(plan: Plan, facts: ClusterFacts, images: Sequence[NodeImage]) -> Advice | None:
    digest = DIGEST_PREFIX in plan.driver.version
    if not plan.driver_enabled or (plan.driver.useNvidiaDriverCRD and not digest):
        return None
    release = plan.operator.version
    by_tag: dict[str, list[str]] = {}
    for node in facts.gpu_nodes:
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
        first_tag = first.tag_os(release)
        wrong = {n.name for n in facts.gpu_nodes if n.tag_os(release) != first_tag}
        wrong_images = sorted({i.image for i in images if i.node in wrong})
        message = (
            f"GPU nodes run {len(by_tag)} OS versions ({groups}). Under ClusterPolicy the operator uses "
            f"{first_tag} (from {first.name}) for every node, so {_names(wrong)} would run "
            f"{', '.join(wrong_images)}, built for another OS. Set driver.useNvidiaDriverCRD: true to get "
            "one driver DaemonSet per OS."
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
        "and applies its tag cluster-wide (operator issues #1622, #94, #328); the NVIDIADriver CRD makes a "
        "node pool, and a DaemonSet, per OS tag.",
    )


def _repoconfig_unsupported(plan: Plan, facts: ClusterFacts) -> Advice | None:
    if plan.mode is not Mode.UPSTREAM or not plan.driver.repoConfig.configMapName:
        return None
    release = plan.operator.version
    bad = sorted({n.tag_os(release) for n in facts.gpu_nodes if n.os_id not in REPOCONFIG_OS_IDS})
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
        f"driver.repoConfig.configMapName is set but the operator cannot mount it on {', '.join(bad)}: "
        f"{errors}. {where}",
        "The operator mounts repoConfig files only for the distributions in its RepoConfigPathMap "
        f"({', '.join(sorted(REPOCONFIG_OS_IDS))}); SLE Micro 5.x (sle-micro) is not among them.",
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


def advise(plan: Plan, facts: ClusterFacts, images: Sequence[NodeImage], mirror: Sequence[MirrorItem]) -> list[Advice]:
    """Every warning and note that applies to this plan on these nodes, in a fixed order."""
    out: list[Advice] = []
    mixed = _mixed_os(plan, facts, images)
    if mixed:
        out.append(mixed)
    if plan.mode is Mode.UPSTREAM:
        out.append(
            Advice(
                "warning",
                "upstream-not-validated",
                "Upstream mode (NVIDIA's driver image compiling the module on each node) is configurable but "
                "not validated in this release of gpu-wizard.",
                "This release's end-to-end checks cover the precompiled and pre-installed modes; an upstream "
                "driver container installs the node's kernel headers from the OS package repositories at start, "
                "which has not been exercised here.",
            )
        )
        if plan.driver.airgapped and not plan.driver.repoConfig.configMapName:
            out.append(
                Advice(
                    "warning",
                    "airgapped-no-repoconfig",
                    "The nodes are air-gapped but driver.repoConfig.configMapName is empty: the driver container "
                    "cannot download the kernel headers and packages it compiles with. Create a ConfigMap of "
                    "repository files pointing at an internal mirror and name it here.",
                    "In upstream mode the driver container installs packages from the OS repositories at start; "
                    "the repo files must replace the image's defaults by name, or the public repositories are "
                    "still tried (operator issues #337, #299).",
                )
            )
    unsupported = _repoconfig_unsupported(plan, facts)
    if unsupported:
        out.append(unsupported)
    if mirror:
        targets = ", ".join(item.target for item in mirror)
        out.append(
            Advice(
                "note",
                "image-whitelist",
                f"If the cluster only admits allow-listed images (an ImageWhiteList policy), add the imported "
                f"tags: {targets}.",
                "The operator creates the driver DaemonSets with exactly these references; an allow-list that "
                "lacks them rejects the pods and the driver never starts.",
            )
        )
    install_dir = _driver_install_dir(plan, facts)
    if install_dir:
        out.append(install_dir)
    consumer = {n.name: n.gpu_product for n in facts.gpu_nodes if CONSUMER_GPU_RE.search(n.gpu_product)}
    if consumer:
        products = sorted(set(consumer.values()))
        out.append(
            Advice(
                "warning",
                "geforce-licence",
                f"{', '.join(products)} on {_names(consumer)}: GeForce/TITAN consumer GPUs are not supported by "
                "the GPU Operator, and NVIDIA's GeForce driver licence does not permit data-center deployment.",
                "The operator's driver containers carry NVIDIA's data-center driver, supported on data-center "
                "GPUs; the GeForce/TITAN software licence excludes data-center use (blockchain processing aside).",
            )
        )
    if not facts.gpu_nodes:
        out.append(
            Advice(
                "warning",
                "no-gpu-nodes",
                "The cluster has no GPU nodes: no node is labelled nvidia.com/gpu.present=true or carries an NVIDIA PCI "
                "label, so no driver image or mirror item could be computed.",
                "Image tags need each GPU node's kernel and OS; without GPU nodes (or without NFD labels) the "
                "operator deploys no driver and still reports ready with reason NoGPUNodes.",
            )
        )
    return out


def advice_text(advice: Iterable[Advice]) -> str:
    """Plain-text listing: ``LEVEL code: message`` then an indented ``reason:`` line per entry."""
    return "".join(f"{a.level} {a.code}: {a.message}\n    reason: {a.reason}\n" for a in advice)
