"""Demo-cluster scenarios: the nodes, registry, RBAC and faults of one simulated cluster.

A scenario is a YAML file in ``assets/scenarios/`` (or any path). This module defines its shape;
loading and validation live here too so the server and the simulation read one model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NodeSpec:
    """One simulated node (or ``count`` generated copies named ``<name>-<i>``)."""

    name: str
    os_id: str
    os_version: str
    os_image: str
    kernel: str
    arch: str = "amd64"
    gpu_product: str = ""
    """e.g. ``NVIDIA-H200``; empty for a CPU-only node."""
    gpu_count: int = 0
    host_driver: str = ""
    """Version of a working driver installed on the host (pre-installed mode); empty when none."""
    host_driver_broken: bool = False
    """A host driver is installed but nvidia-smi fails on it."""
    nfd: bool = True
    """NFD labels present (else only status.nodeInfo tells the kernel and OS)."""
    runtime: str = "containerd://1.7.23"
    noexec_mounts: list[str] = field(default_factory=list)
    """Mount points mounted noexec (e.g. ``/run``)."""
    labels: dict[str, str] = field(default_factory=dict)
    count: int = 1


@dataclass
class RegistrySpec:
    """Where the simulated kubelet pulls from."""

    url: str = ""
    """A real OCI registry (``http://127.0.0.1:5055``) standing in for the catalog's hosts; empty: catalog only."""
    catalog: dict[str, dict[str, str]] = field(default_factory=dict)
    """``{"host/path/image": {"tag": "sha256:…"}}``: published tags and their digests."""
    hosts: list[str] = field(default_factory=list)
    """Registry hosts the catalog speaks for; images elsewhere are treated as public and pullable."""


@dataclass
class FaultSpec:
    """Injected failures, per scenario or by flag."""

    latency_ms: int = 0
    error_rate: float = 0.0
    error_code: int = 500
    retry_after_s: int = 1
    drop_rate: float = 0.0
    watch_expiry_s: float = 0.0
    """Watches older than this many seconds get a 410 Gone; 0 disables."""
    exec_fail_nodes: list[str] = field(default_factory=list)
    exec_latency_ms: int = 0
    seed: int = 0


@dataclass
class OperatorSpec:
    """The GPU Operator as installed in the scenario."""

    release: str = "v26.7.0"
    namespace: str = "gpu-operator"
    installed: bool = True
    """Operator Deployment present (it reconciles ClusterPolicy / NVIDIADriver)."""
    crds: bool = True
    """The ClusterPolicy and NVIDIADriver CRDs are registered."""
    cluster_policy: dict[str, Any] | None = None
    """A ClusterPolicy already running (``existing-install``), as a full object."""


@dataclass
class Scenario:
    """One simulated cluster."""

    name: str
    description: str = ""
    operator: OperatorSpec = field(default_factory=OperatorSpec)
    nodes: list[NodeSpec] = field(default_factory=list)
    registry: RegistrySpec = field(default_factory=RegistrySpec)
    rbac_deny: list[dict[str, str]] = field(default_factory=list)
    """Denied permissions: ``{"verb": "patch", "resource": "clusterpolicies", "group": "nvidia.com"}``."""
    faults: FaultSpec = field(default_factory=FaultSpec)
