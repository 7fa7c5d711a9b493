"""Reading a Node object back into a simulated machine, as the demo's kubelet and NFD wrote it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.demo.rules.operator_rules import (
    LABEL_GPU_PRESENT,
    LABEL_KERNEL,
    LABEL_OS_ID,
    LABEL_OS_VERSION,
    NVIDIA_PCI_LABELS,
)

LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"
LABEL_GPU_COUNT = "nvidia.com/gpu.count"

# PRETTY_NAME (kubelet's osImage) -> (ID, how VERSION_ID is spelt from the match), first match wins.
_PRETTY_NAMES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^Ubuntu (\d+\.\d+)"), "ubuntu"),
    (re.compile(r"^Red Hat Enterprise Linux CoreOS (\d)(\d+)\."), "rhcos"),
    (re.compile(r"^Red Hat Enterprise Linux (\d+(?:\.\d+)?)"), "rhel"),
    (re.compile(r"^Rocky Linux (\d+(?:\.\d+)?)"), "rocky"),
    (re.compile(r"^Oracle Linux Server (\d+(?:\.\d+)?)"), "ol"),
    (re.compile(r"^SUSE Linux Enterprise Micro (\d+\.\d+)"), "sle-micro"),
    (re.compile(r"^SUSE Linux Micro (\d+\.\d+)"), "sl-micro"),
    (re.compile(r"^SUSE Linux Enterprise Server (\d+)(?: SP(\d+))?"), "sles"),
    (re.compile(r"^Debian GNU/Linux (\d+)"), "debian"),
    (re.compile(r"^CentOS Stream (\d+)"), "centos"),
]
_GENERIC_PRETTY = re.compile(r"^([A-Za-z][A-Za-z0-9._-]*) ([A-Za-z0-9][A-Za-z0-9._-]*)$")
"""What ``hostos.pretty_name`` writes for an OS it has no os-release text for: ``<Id> <VERSION_ID>``."""


def os_from_pretty_name(pretty: str) -> tuple[str, str] | None:
    """(``ID``, ``VERSION_ID``) of an os-release ``PRETTY_NAME`` such as ``Ubuntu 22.04.5 LTS``, or None."""
    text = pretty.strip()
    for pattern, os_id in _PRETTY_NAMES:
        match = pattern.match(text)
        if match is None:
            continue
        parts = [g for g in match.groups() if g]
        if os_id == "rhcos":
            return os_id, f"{parts[0]}.{parts[1]}"
        return os_id, ".".join(parts)
    generic = _GENERIC_PRETTY.match(text)
    return (generic[1].lower(), generic[2]) if generic else None


@dataclass(frozen=True)
class NodeReading:
    """A node's machine, as its labels and ``status.nodeInfo`` tell it."""

    name: str
    kernel: str
    kernel_from_nfd: bool
    os_id: str
    """"" when neither NFD nor osImage names the OS."""
    os_version: str
    os_image: str
    gpu: bool
    gpu_product: str
    gpu_count: int
    runtime: str
    arch: str
    kubelet_version: str
    labels: dict[str, str] = field(default_factory=dict)


def read_node(node: Mapping[str, Any]) -> NodeReading:
    """Read one Node (API JSON, camelCase keys)."""
    metadata = node.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    kernel = labels.get(LABEL_KERNEL, "")
    from_nfd = bool(kernel)
    if not kernel:
        kernel = str(info.get("kernelVersion") or "")
    os_image = str(info.get("osImage") or "")
    os_id, os_version = labels.get(LABEL_OS_ID, ""), labels.get(LABEL_OS_VERSION, "")
    if not (os_id and os_version):
        os_id, os_version = os_from_pretty_name(os_image) or ("", "")
    present = labels.get(LABEL_GPU_PRESENT)
    gpu = present == "true" if present is not None else any(labels.get(k) == "true" for k in NVIDIA_PCI_LABELS)
    count = str((status.get("capacity") or {}).get("nvidia.com/gpu") or labels.get(LABEL_GPU_COUNT) or "0")
    return NodeReading(
        name=str(metadata.get("name") or ""),
        kernel=kernel,
        kernel_from_nfd=from_nfd,
        os_id=os_id,
        os_version=os_version,
        os_image=os_image,
        gpu=gpu,
        gpu_product=labels.get(LABEL_GPU_PRODUCT, ""),
        gpu_count=int(count) if count.isdigit() else 0,
        runtime=str(info.get("containerRuntimeVersion") or ""),
        arch=str(info.get("architecture") or "amd64"),
        kubelet_version=str(info.get("kubeletVersion") or "v1.31.4"),
        labels=labels,
    )
