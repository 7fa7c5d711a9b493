"""Node facts: what the wizard learns from a NodeList and how it groups GPU nodes.

Input is plain Kubernetes JSON (``kubectl get nodes -o json`` or the API's NodeList). Per node we
read the kernel and OS the operator itself would read (NFD labels first, ``status.nodeInfo``
otherwise, recording which), whether it has an NVIDIA GPU, and the labels that tell the current
driver state. GPU nodes are grouped by (kernel, OS tag): one driver image per group. A NodeList's
facts are checked against Kubernetes' grammars (:mod:`wizard.engine.node_grammar`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.engine.naming import UNKNOWN_OS_TAG as UNKNOWN_OS_TAG  # declared with the image names; re-exported
from wizard.engine.naming import os_tag
from wizard.engine.node_grammar import NodeFactsError, node_fact_errors, quoted
from wizard.engine.plan import DEFAULT_RELEASE, DEFAULT_TOOLKIT_INSTALL_DIR, IMMUTABLE_TOOLKIT_INSTALL_DIR, Mode
from wizard.engine.textsafe import printable

NFD = "feature.node.kubernetes.io"
LABEL_KERNEL = f"{NFD}/kernel-version.full"
LABEL_OS_ID = f"{NFD}/system-os_release.ID"
LABEL_OS_VERSION = f"{NFD}/system-os_release.VERSION_ID"
LABEL_GPU_PRESENT = "nvidia.com/gpu.present"
LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"
LABEL_GPU_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_DEPLOY_DRIVER = "nvidia.com/gpu.deploy.driver"
LABEL_UPGRADE_STATE = "nvidia.com/gpu-driver-upgrade-state"
LABEL_ARCH = "kubernetes.io/arch"
#: Annotation key prefixes a Kubernetes distribution writes on its nodes (kept for the runtime flavour).
DISTRIBUTION_ANNOTATION_PREFIXES = ("rke2.io/", "k3s.io/", "k0sproject.io/", "microk8s.io/")
PCI_NVIDIA_LABELS = (
    f"{NFD}/pci-10de.present",
    f"{NFD}/pci-0302_10de.present",
    f"{NFD}/pci-0300_10de.present",
)

#: OSes whose /usr/local is read-only, so the toolkit must install elsewhere (issue #575, #2382).
IMMUTABLE_OS_IDS = frozenset({"sle-micro", "sl-micro", "talos", "flatcar"})
#: OSes for which NVIDIA (or SUSE) publishes precompiled driver images.
PRECOMPILED_OS_IDS = frozenset({"sle-micro", "sl-micro"})
#: OSes for which no driver container exists in any mode: the host image carries the driver (or a
#: system extension adds it), so only the pre-installed mode works there.
NO_DRIVER_IMAGE_OSES: Mapping[str, str] = {
    "bottlerocket": "Bottlerocket (use its -nvidia variant)",
    "talos": "Talos (add the nvidia system extensions)",
    "flatcar": "Flatcar (install the driver on the host, e.g. with a sysext)",
    "cos": "Container-Optimized OS (install the driver with GKE's installer DaemonSet)",
    "amzn": "Amazon Linux (use an AMI with the driver, e.g. the EKS GPU-optimised AMI)",
}
#: The architecture NVIDIA builds precompiled driver images for (the operator docs: "x86_64 only").
PRECOMPILED_ARCH = "amd64"

# osImage patterns, checked in order: (regex, ID, how VERSION_ID is built from the match).
_OS_IMAGE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"SUSE Linux Enterprise Micro (\d+)\.(\d+)", re.I), "sle-micro"),
    (re.compile(r"SUSE Linux Micro (\d+)\.(\d+)", re.I), "sl-micro"),
    (re.compile(r"SUSE Linux Enterprise Server (\d+)(?: SP(\d+))?", re.I), "sles"),
    (re.compile(r"Red Hat Enterprise Linux CoreOS (\d)(\d+)", re.I), "rhcos"),
    (re.compile(r"Red Hat Enterprise Linux(?: Server)? (\d+)(?:\.(\d+))?", re.I), "rhel"),
    (re.compile(r"Rocky Linux (\d+)(?:\.(\d+))?", re.I), "rocky"),
    (re.compile(r"Oracle Linux Server (\d+)(?:\.(\d+))?", re.I), "ol"),
    (re.compile(r"CentOS(?: Stream| Linux)? (\d+)", re.I), "centos"),
    (re.compile(r"Ubuntu (\d+\.\d+)", re.I), "ubuntu"),
    (re.compile(r"Debian GNU/Linux (\d+)", re.I), "debian"),
    (re.compile(r"Flatcar Container Linux.* (\d+\.\d+\.\d+)", re.I), "flatcar"),
    (re.compile(r"Talos \(v?(\d+\.\d+)", re.I), "talos"),
    (re.compile(r"Bottlerocket OS (\d+\.\d+\.\d+)", re.I), "bottlerocket"),
    (re.compile(r"Amazon Linux (\d+)", re.I), "amzn"),
    (re.compile(r"Container-Optimized OS from Google()", re.I), "cos"),
]


@functools.lru_cache(maxsize=1024)
def parse_os_image(os_image: str) -> tuple[str, str] | None:
    """``status.nodeInfo.osImage`` ("Ubuntu 22.04.4 LTS") to (ID, VERSION_ID), or None if unknown.

    Cached: a cluster has a handful of distinct OS images, and discovery asks once per node.
    """
    for pattern, os_id in _OS_IMAGE_PATTERNS:
        match = pattern.search(os_image)
        if not match:
            continue
        groups = [g for g in match.groups() if g is not None]
        return os_id, ".".join(groups)
    return None


def _shown(value: Any) -> Any:
    return _printable_cached(value) if isinstance(value, str) else value  # a non-string is refused by the loader


@functools.lru_cache(maxsize=1024)
def _printable_cached(value: str) -> str:
    # nodeInfo's free text repeats across a cluster's nodes (a few OS images and runtime versions)
    return printable(value)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


@dataclass(frozen=True)
class NodeFacts:
    """What one node tells about its kernel, OS, GPU and driver state."""

    name: str
    kernel: str
    kernel_source: str
    """``nfd`` (kernel-version.full label) or ``nodeInfo`` (status.nodeInfo.kernelVersion)."""
    os_id: str
    os_version: str
    os_source: str
    """``nfd`` (system-os_release labels), ``nodeInfo`` (parsed osImage) or ``unknown``."""
    os_image: str
    gpu: bool
    gpu_product: str
    gpu_count: int
    deploy_driver: str
    """The ``nvidia.com/gpu.deploy.driver`` label: ``true``, ``pre-installed``, ``false`` or empty."""
    container_runtime: str
    upgrade_state: str = ""
    labels: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    arch: str = ""
    """``kubernetes.io/arch`` (``status.nodeInfo.architecture`` without it): ``amd64``, ``arm64``…"""
    info_kernel: str = ""
    """``status.nodeInfo.kernelVersion``, what the kubelet reports, to compare with the NFD label."""
    info_os: str = ""
    """ID+VERSION_ID parsed from ``status.nodeInfo.osImage`` (``ubuntu22.04``), empty when not recognised."""
    mig_strategy: str = ""
    """GFD's ``nvidia.com/mig.strategy``: ``single`` (MIG devices advertised as ``nvidia.com/gpu``), ``mixed``, ``none``."""
    gpu_replicas: int = 1
    """GFD's ``nvidia.com/gpu.replicas``: time-slicing or MPS shares advertised per physical GPU."""
    kubelet_version: str = ""
    """``status.nodeInfo.kubeletVersion`` (``v1.31.4+rke2r1``): names the distribution that built the kubelet."""
    annotations: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    """The node's annotations whose key names a distribution (``rke2.io/``, ``k3s.io/``…): the rest is not kept."""

    @property
    def nfd_labelled(self) -> bool:
        """Node Feature Discovery has labelled this node (any ``feature.node.kubernetes.io/`` label)."""
        return any(key.startswith(f"{NFD}/") for key in self.labels)

    @property
    def preinstalled(self) -> bool:
        """The driver manager found a working host driver on this node."""
        return self.deploy_driver == "pre-installed"

    def tag_os(self, operator_release: str) -> str:
        """The OS tag the given operator release derives for this node, ``unknown`` where it derives none.

        ``unknown`` (no OS, or a VERSION_ID the release refuses, see :meth:`os_tag_error`) only groups
        and labels such nodes; no image is ever built from it (:attr:`~wizard.engine.mirror.NodeImage.unplaced`).
        """
        if not self.os_id:
            return UNKNOWN_OS_TAG
        tag, error = _derived_os_tag(self.os_id, self.os_version, operator_release)
        return UNKNOWN_OS_TAG if error else tag

    def os_tag_error(self, operator_release: str) -> str:
        """Why the given release cannot make an OS tag of this node's ID and VERSION_ID (``A.10``), or ``""``."""
        if not self.os_id:
            return ""
        return _derived_os_tag(self.os_id, self.os_version, operator_release)[1]


@functools.lru_cache(maxsize=1024)
def _derived_os_tag(os_id: str, os_version: str, operator_release: str) -> tuple[str, str]:
    """``(tag, "")`` or ``("", why not)``: thousands of nodes share a few OSes, so each is worked out once (the
    Driver and Preview steps asked for 5,000 nodes' tags on the event loop, a stall each time). Bounded: the
    OS strings come from the cluster."""
    try:
        return os_tag(os_id, os_version, operator_release), ""
    except ValueError as exc:
        return "", str(exc)


def node_facts(node: Mapping[str, Any]) -> NodeFacts:
    """Facts of one node from its Kubernetes JSON (camelCase keys, as the API serves them)."""
    metadata = node.get("metadata") or {}
    labels: Mapping[str, str] = metadata.get("labels") or {}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    capacity = status.get("capacity") or {}

    kernel, kernel_source = labels.get(LABEL_KERNEL, ""), "nfd"
    if not kernel:
        kernel, kernel_source = info.get("kernelVersion", ""), "nodeInfo"

    # free text the kubelet reports, only ever shown: made printable here, once (kernelVersion is checked instead)
    os_image = _shown(info.get("osImage", ""))
    parsed_info = parse_os_image(os_image) if isinstance(os_image, str) else None
    os_id, os_version, os_source = labels.get(LABEL_OS_ID, ""), labels.get(LABEL_OS_VERSION, ""), "nfd"
    if not (os_id and os_version):
        os_id, os_version, os_source = (*parsed_info, "nodeInfo") if parsed_info else ("", "", "unknown")

    gpu_present = labels.get(LABEL_GPU_PRESENT)
    gpu = _truthy(gpu_present) if gpu_present is not None else any(_truthy(labels.get(k)) for k in PCI_NVIDIA_LABELS)
    count_text = str(capacity.get("nvidia.com/gpu") or labels.get(LABEL_GPU_COUNT) or "0")
    replicas = str(labels.get(LABEL_GPU_REPLICAS) or "1")
    return NodeFacts(
        name=metadata.get("name", ""),
        kernel=kernel,
        kernel_source=kernel_source,
        os_id=os_id.lower(),
        os_version=os_version,
        os_source=os_source,
        os_image=os_image,
        gpu=gpu,
        gpu_product=labels.get(LABEL_GPU_PRODUCT, ""),
        gpu_count=int(count_text) if count_text.isdigit() else 0,
        deploy_driver=labels.get(LABEL_DEPLOY_DRIVER, ""),
        container_runtime=_shown(info.get("containerRuntimeVersion", "")),
        upgrade_state=labels.get(LABEL_UPGRADE_STATE, ""),
        labels=dict(labels),
        arch=labels.get(LABEL_ARCH) or info.get("architecture", ""),
        info_kernel=info.get("kernelVersion", ""),
        info_os="".join(parsed_info) if parsed_info else "",
        mig_strategy=str(labels.get(LABEL_MIG_STRATEGY) or ""),
        gpu_replicas=int(replicas) if replicas.isdigit() and int(replicas) > 0 else 1,
        kubelet_version=_shown(info.get("kubeletVersion", "")),
        annotations={
            k: v
            for k, v in (metadata.get("annotations") or {}).items()
            if isinstance(k, str) and k.startswith(DISTRIBUTION_ANNOTATION_PREFIXES)
        },
    )


@dataclass(frozen=True)
class NodeGroup:
    """GPU nodes sharing one (kernel, OS tag): they need the same driver image."""

    kernel: str
    os_id: str
    os_version: str
    tag_os: str
    nodes: tuple[NodeFacts, ...]

    @property
    def count(self) -> int:
        return len(self.nodes)

    @property
    def products(self) -> list[str]:
        """Distinct GPU products in the group, in first-seen order."""
        return list(dict.fromkeys(n.gpu_product for n in self.nodes if n.gpu_product))


@dataclass(frozen=True)
class Recommendation:
    """A suggested value and why."""

    value: str
    reason: str


@dataclass
class ClusterFacts:
    """Facts of every node, with GPU nodes grouped and a recommended mode."""

    nodes: list[NodeFacts]

    @property
    def gpu_nodes(self) -> list[NodeFacts]:
        return [n for n in self.nodes if n.gpu]

    def labels_by_node(self) -> dict[str, Mapping[str, str]]:
        """Every node's labels, by name."""
        return {n.name: n.labels for n in self.nodes}

    def groups(self, operator_release: str) -> list[NodeGroup]:
        """GPU nodes grouped by (kernel, OS tag), largest group first, then by name."""
        buckets: dict[tuple[str, str], list[NodeFacts]] = {}
        for node in self.gpu_nodes:
            buckets.setdefault((node.kernel, node.tag_os(operator_release)), []).append(node)
        groups = [
            NodeGroup(kernel, members[0].os_id, members[0].os_version, tag, tuple(members))
            for (kernel, tag), members in buckets.items()
        ]
        return sorted(groups, key=lambda g: (-g.count, g.tag_os, g.kernel))

    def os_tags(self, operator_release: str) -> list[str]:
        """Distinct OS tags among GPU nodes."""
        return sorted({n.tag_os(operator_release) for n in self.gpu_nodes})

    def precompiled_held(self, tags: Iterable[str], operator_release: str) -> list[str] | None:
        """The precompiled tags the pull registry holds for every GPU (kernel, OS) group on its best branch
        (``580-<kernel>-<os>``, :func:`wizard.engine.precompiled_tags.held_branches`), or None when no branch the
        release supports has a tag for every group."""
        from wizard.engine.precompiled_tags import held_branches, tag_for

        groups = [(g.kernel, g.tag_os) for g in self.groups(operator_release)]
        branches = held_branches(tags, groups, operator_release)
        return [tag_for(branches[0], kernel, tag_os) for kernel, tag_os in groups] if branches else None

    def precompiled_missing(self, tags: Iterable[str], operator_release: str) -> list[str]:
        """The exact precompiled tags the pull registry lacks before precompiled can serve every GPU group."""
        from wizard.engine.precompiled_tags import missing_tags

        return missing_tags(tags, [(g.kernel, g.tag_os) for g in self.groups(operator_release)], operator_release)

    def recommend_mode(
        self,
        host_drivers: Mapping[str, str] | None = None,
        secure_boot: Iterable[str] = (),
        *,
        precompiled_tags: Iterable[str] | None = None,
        operator_release: str = "",
    ) -> Recommendation:
        """The driver mode these nodes suggest, with the reason.

        ``host_drivers`` (node -> the driver version the host's own nvidia-smi reported, "" for none) is
        what a host check found before the operator ran, when the deploy label cannot tell yet.
        ``secure_boot``: the GPU nodes a host check found with UEFI Secure Boot on; on Ubuntu, NVIDIA's
        precompiled images carry Canonical-signed modules the kernel loads, where an upstream build is refused.
        ``precompiled_tags``: the tags the pull registry's driver repository holds (None: not listed). Listed, they
        decide: precompiled is recommended when they hold a tag for every (kernel, OS) group on one branch, and
        Secure Boot recommends it only then (the signed tuples must be there to be pulled).
        """
        gpu = self.gpu_nodes
        if not gpu:
            return Recommendation(Mode.UPSTREAM.value, "no GPU nodes found; upstream is the operator's default")
        if all(n.preinstalled for n in gpu):
            return Recommendation(
                Mode.PREINSTALLED.value,
                "every GPU node is labelled nvidia.com/gpu.deploy.driver=pre-installed: a host driver already works",
            )
        found = host_drivers or {}
        if all(found.get(n.name) for n in gpu):
            versions = ", ".join(sorted({found[n.name] for n in gpu}))
            return Recommendation(
                Mode.PREINSTALLED.value,
                f"nvidia-smi passed on every GPU node's host (driver {versions}): a host driver already works",
            )
        working = sorted(n.name for n in gpu if found.get(n.name))
        if working:  # a containerized driver cannot load its module beside a loaded one: the host's is the way
            versions = ", ".join(sorted({found[name] for name in working}))
            lacking = sorted(n.name for n in gpu if n.name in found and not found[n.name])
            rest = (
                f"; install the same driver on {_names(lacking)} too, or remove it everywhere for a containerized mode"
                if lacking
                else ""
            )
            return Recommendation(
                Mode.PREINSTALLED.value,
                f"a host driver ({versions}) is loaded on {_names(working)}: the driver container cannot load its "
                f"own module beside it{rest}",
            )
        signed = set(secure_boot)
        booting = sorted(n.name for n in gpu if n.name in signed)
        release = operator_release or DEFAULT_RELEASE
        held = None if precompiled_tags is None else self.precompiled_held(precompiled_tags, release)
        if booting and all(n.os_id == "ubuntu" for n in gpu) and (precompiled_tags is None or held):
            shown = ", ".join(booting[:3]) + (f" and {len(booting) - 3} more" if len(booting) > 3 else "")
            where = f" (the registry holds {', '.join(held[:2])}{' …' if len(held) > 2 else ''})" if held else ""
            return Recommendation(
                Mode.PRECOMPILED.value,
                f"Secure Boot is on ({shown}): the kernel loads only signed modules; NVIDIA's precompiled Ubuntu "
                f"images carry Canonical-signed ones{where}, an upstream build is refused",
            )
        if held:
            return Recommendation(
                Mode.PRECOMPILED.value,
                f"the registry holds a precompiled image for every kernel and OS ({', '.join(held[:2])}"
                f"{' …' if len(held) > 2 else ''}): no compiler or package mirror on the nodes",
            )
        immutable = sorted({f"{n.os_id} {n.os_version}" for n in gpu if n.os_id in PRECOMPILED_OS_IDS})
        if immutable:
            return Recommendation(
                Mode.PRECOMPILED.value,
                f"{', '.join(immutable)} is immutable: the driver cannot be compiled on the node, so use an image "
                "built for each node's exact kernel",
            )
        names = sorted({n.os_id or "unknown OS" for n in gpu})
        reason = f"{', '.join(names)}: NVIDIA's driver image compiles the module on the node for any kernel"
        if (
            booting and precompiled_tags is not None and all(n.os_id == "ubuntu" for n in gpu)
        ):  # neither mode loads there yet: say what would make one work
            missing = self.precompiled_missing(precompiled_tags, release)
            shown = ", ".join(booting[:3]) + (f" and {len(booting) - 3} more" if len(booting) > 3 else "")
            lacks = f"lacks {', '.join(missing[:2])}{' …' if len(missing) > 2 else ''}" if missing else "lacks them"
            reason += (
                f"; but Secure Boot is on ({shown}): an upstream build is refused there, and precompiled's signed "
                f"images need the registry, which {lacks}"
            )
        elif booting and not all(n.os_id == "ubuntu" for n in gpu):  # no signed precompiled image to point at
            shown = ", ".join(booting[:3]) + (f" and {len(booting) - 3} more" if len(booting) > 3 else "")
            reason += (
                f"; but Secure Boot is on ({shown}): an upstream build is refused there; use a host driver whose "
                "module is signed with a key in the node's MOK list (mode: preinstalled)"
            )
        return Recommendation(Mode.UPSTREAM.value, reason)

    def recommend_toolkit_dir(self) -> Recommendation:
        """The toolkit installDir profile default for these GPU nodes' OS."""
        immutable = sorted({n.os_id for n in self.gpu_nodes if n.os_id in IMMUTABLE_OS_IDS})
        if immutable:
            return Recommendation(
                IMMUTABLE_TOOLKIT_INSTALL_DIR,
                f"{', '.join(immutable)} mounts /usr/local read-only; the toolkit installs under /run instead",
            )
        return Recommendation(DEFAULT_TOOLKIT_INSTALL_DIR, "the operator's default; /usr/local is writable here")


_TEXT_FACTS = (
    "kernel",
    "info_kernel",
    "os_version",
    "os_image",
    "gpu_product",
    "deploy_driver",
    "container_runtime",
    "arch",
    "mig_strategy",
    "kubelet_version",
)


def cluster_facts(nodes: Iterable[Mapping[str, Any]]) -> ClusterFacts:
    """Facts of every node in a NodeList's ``items``."""
    return ClusterFacts([node_facts(n) for n in nodes])


def facts_from_nodelist(nodelist: Mapping[str, Any]) -> ClusterFacts:
    """Facts from a NodeList document (or a single Node, or a ``kind: List`` of nodes).

    A file is the user's input, not the API server's answer: ValueError naming the item when a node
    in it has the wrong shape (``metadata`` that is not a mapping, labels that are not strings…).
    """
    if nodelist.get("kind") == "Node":
        items: Any = [nodelist]
    else:
        items = nodelist.get("items")
        if not isinstance(items, list):
            raise ValueError("not a NodeList: no 'items' list (expected `kubectl get nodes -o json` output)")
    found: list[NodeFacts] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            continue
        try:
            facts = node_facts(item)
        except (AttributeError, TypeError, ValueError) as exc:
            raise ValueError(f"items[{index}] is not a Node as kubectl prints it ({exc.__class__.__name__})") from None
        if not facts.name or not isinstance(facts.name, str):
            raise ValueError(f"items[{index}]: metadata.name must be the node's name (a string)")
        wrong = [f for f in _TEXT_FACTS if not isinstance(getattr(facts, f), str)]
        labels_ok = all(isinstance(k, str) and isinstance(v, str) for k, v in facts.labels.items())
        if wrong or not labels_ok:
            raise ValueError(
                f"items[{index}] ({quoted(facts.name)}): labels and status.nodeInfo values must be strings"
            )
        errors = node_fact_errors(facts)
        if errors:
            raise NodeFactsError(f"items[{index}]: {errors[0]}")
        found.append(facts)
    return ClusterFacts(found)


def _names(nodes: Sequence[str], most: int = 3) -> str:
    """``a, b, c and 2 more``."""
    return ", ".join(nodes[:most]) + (f" and {len(nodes) - most} more" if len(nodes) > most else "")
