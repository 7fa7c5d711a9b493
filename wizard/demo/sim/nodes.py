"""Node objects as ``kubectl get nodes -o json`` shows them, built from a scenario's NodeSpec."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from wizard.demo.rules.nodeinfo import LABEL_GPU_COUNT, LABEL_GPU_PRODUCT
from wizard.demo.rules.operator_rules import LABEL_KERNEL, LABEL_OS_ID, LABEL_OS_VERSION, LABEL_OS_VERSION_MAJOR, NFD
from wizard.demo.rules.runtime_layout import flavour_labels
from wizard.demo.scenarios.scenario import NodeSpec

#: Per-node resources of the simulated machines: (cpu, memory Ki) for CPU-only and GPU nodes.
_CPU_NODE = ("16", "65843476Ki")
_GPU_NODE = ("192", "2113389280Ki")


def _node_uuid(name: str, what: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{what}.{name}.gpu-wizard.demo"))


def node_ip(index: int) -> str:
    """The node's InternalIP: 10.0.<i/250>.<10 + i%250>."""
    return f"10.0.{index // 250}.{10 + index % 250}"


def _kernel_parts(kernel: str) -> tuple[str, str, str]:
    head = kernel.split("-", 1)[0].split(".")
    head += ["0"] * (3 - len(head))
    return head[0], head[1], head[2]


def node_labels(spec: NodeSpec) -> dict[str, str]:
    """The labels kubelet, NFD (when ``spec.nfd``) and GFD put on the node, then the scenario's own."""
    labels = {
        "beta.kubernetes.io/arch": spec.arch,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": spec.arch,
        "kubernetes.io/hostname": spec.name,
        "kubernetes.io/os": "linux",
        **flavour_labels(spec.runtime_flavour),
    }
    if spec.nfd:
        major, minor, revision = _kernel_parts(spec.kernel)
        version_major = spec.os_version.split(".", 1)[0]
        labels.update(
            {
                f"{NFD}/cpu-cpuid.AVX2": "true",
                f"{NFD}/cpu-model.vendor_id": "Intel" if spec.arch == "amd64" else "ARM",
                f"{NFD}/kernel-config.NO_HZ": "true",
                LABEL_KERNEL: spec.kernel,
                f"{NFD}/kernel-version.major": major,
                f"{NFD}/kernel-version.minor": minor,
                f"{NFD}/kernel-version.revision": revision,
                f"{NFD}/pci-1af4.present": "true",
                LABEL_OS_ID: spec.os_id,
                LABEL_OS_VERSION: spec.os_version,
                LABEL_OS_VERSION_MAJOR: version_major,
            }
        )
        if "." in spec.os_version:
            labels[f"{LABEL_OS_VERSION}.minor"] = spec.os_version.split(".", 1)[1].split(".", 1)[0]
        if spec.gpu:
            labels[f"{NFD}/pci-10de.present"] = "true"
    if spec.gpu:
        labels[LABEL_GPU_PRODUCT] = spec.gpu_product
        labels[LABEL_GPU_COUNT] = str(spec.gpu_count)
        labels["nvidia.com/mig.capable"] = "true" if spec.mig_profile else "false"
    if spec.gpu and spec.mig_profile:
        # GFD under MIG strategy single: the MIG devices are the node's "GPUs", named by their profile
        labels[LABEL_GPU_PRODUCT] = f"{spec.gpu_product}-MIG-{spec.mig_profile}"
        labels[LABEL_GPU_COUNT] = str(spec.advertised_gpus)
        labels["nvidia.com/mig.strategy"] = "single"
        labels["nvidia.com/mig.config"] = f"all-{spec.mig_profile}"
        labels["nvidia.com/mig.config.state"] = "success"
    labels.update(spec.labels)
    return dict(sorted(labels.items()))


def node_object(spec: NodeSpec, index: int) -> dict[str, Any]:
    """A Node as the API server returns it (without uid/resourceVersion, which the store fills)."""
    cpu, memory = _GPU_NODE if spec.gpu else _CPU_NODE
    resources = {
        "cpu": cpu,
        "ephemeral-storage": "959786032Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": memory,
        "pods": "110",
    }
    allocatable = {**resources, "cpu": str(int(cpu) - 1) if int(cpu) > 1 else cpu, "ephemeral-storage": "934012649394"}
    ip = node_ip(index)
    machine_id = hashlib.md5(spec.name.encode()).hexdigest()  # an id, not a security hash
    condition = {"lastHeartbeatTime": "2026-08-01T00:00:00Z", "lastTransitionTime": "2026-08-01T00:00:00Z"}
    conditions = [
        {**condition, "type": t, "status": "False", "reason": r, "message": m}
        for t, r, m in (
            ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions.append(
        {
            **condition,
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": node_labels(spec),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "nfd.node.kubernetes.io/feature-labels": ""
                if not spec.nfd
                else "kernel-version.full,system-os_release.ID",
            },
        },
        "spec": {"podCIDR": f"10.42.{index % 256}.0/24", "podCIDRs": [f"10.42.{index % 256}.0/24"]},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": spec.name}],
            "allocatable": allocatable,
            "capacity": resources,
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": spec.arch,
                "bootID": _node_uuid(spec.name, "boot"),
                "containerRuntimeVersion": spec.runtime,
                "kernelVersion": spec.kernel,
                "kubeProxyVersion": "",
                "kubeletVersion": spec.kubelet_version,
                "machineID": machine_id,
                "operatingSystem": "linux",
                "osImage": spec.os_image,
                "systemUUID": _node_uuid(spec.name, "system").upper(),
            },
        },
    }


def set_gpu_capacity(node: dict[str, Any], count: int | None) -> None:
    """Advertise (or withdraw, with None) ``nvidia.com/gpu`` as the device plugin does."""
    status = node.setdefault("status", {})
    for key in ("capacity", "allocatable"):
        bucket = status.setdefault(key, {})
        if count is None:
            bucket.pop("nvidia.com/gpu", None)
        else:
            bucket["nvidia.com/gpu"] = str(count)
