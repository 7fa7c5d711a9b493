"""Demo-cluster scenarios: the nodes, registry, RBAC and faults of one simulated cluster.

A scenario is a YAML file in ``assets/scenarios/`` (or any path); ``assets/scenarios/README.md``
documents every field. This module defines the shape and loads it: :func:`load_scenario` reads a
file by name or path, checks every field strictly (unknown keys, wrong types and impossible values
raise :class:`ScenarioError` naming the field) and expands ``count:`` and ``nodelist:`` into nodes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.bounded_read import NODELIST, SCENARIO, InputError, load_bounded
from wizard.bundled import assets
from wizard.demo.rules.release_data import release_lines
from wizard.demo.scenarios.scenario_check import (
    ScenarioError,
    build_dataclass,
    check_scenario,
    nodes_from_nodelist,
)

__all__ = [
    "FaultSpec",
    "NodeSpec",
    "OperatorSpec",
    "RegistrySpec",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "scenario_names",
]


@dataclass
class NodeSpec:
    """One simulated node (or ``count`` generated copies named ``<name>-<i>``)."""

    name: str
    os_id: str
    os_version: str
    os_image: str
    """``status.nodeInfo.osImage``; the loader fills the OS's PRETTY_NAME when the file omits it."""
    kernel: str
    arch: str = "amd64"
    gpu_product: str = ""
    """e.g. ``NVIDIA-H200``; empty for a CPU-only node."""
    gpu_count: int = 0
    """Physical GPUs."""
    mig_profile: str = ""
    """MIG, ``single`` strategy: every GPU split into ``mig_per_gpu`` devices of this profile (``1g.6gb``)."""
    mig_per_gpu: int = 0
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
    kubelet_version: str = "v1.31.4"
    nouveau: bool = False
    """The open-source ``nouveau`` module is loaded (``lsmod`` shows it) and holds the GPUs."""
    secure_boot: bool = False
    """UEFI Secure Boot is on (``mokutil --sb-state``): only signed kernel modules load."""
    dkms: bool = True
    """The host driver (``host_driver``) is registered with dkms and installed for the running kernel (loads at boot)."""
    kernel_headers: bool = True
    """Headers for the running kernel are installed (``/lib/modules/<kernel>/build``)."""
    package_repo: bool = True
    """The node reaches its distribution's package source (its host name resolves)."""
    free_mb: dict[str, int] = field(default_factory=dict)
    """MiB free per mount point (``df``); a mount not named has plenty."""
    runtime_flavour: str = ""
    """``containerd``, ``cri-o``, ``rke2``, ``k3s``, ``k0s`` or ``microk8s``: where the node's containerd lives.
    Empty: read from ``runtime`` and ``kubelet_version``; set, it fills those two where the file leaves them."""

    @property
    def gpu(self) -> bool:
        """Whether the node carries NVIDIA GPUs."""
        return bool(self.gpu_product) and self.gpu_count > 0

    @property
    def advertised_gpus(self) -> int:
        """``nvidia.com/gpu`` as the device plugin advertises it: MIG devices under the single strategy."""
        return self.gpu_count * self.mig_per_gpu if self.mig_profile else self.gpu_count


@dataclass
class RegistrySpec:
    """Where the simulated kubelet pulls from."""

    url: str = ""
    """A real OCI registry (``http://127.0.0.1:5055``) standing in for the catalog's hosts; empty: catalog only."""
    catalog: dict[str, dict[str, str]] = field(default_factory=dict)
    """``{"host/path/image": {"tag": "sha256:…"}}``: published tags and their digests."""
    hosts: list[str] = field(default_factory=list)
    """Registry hosts the catalog speaks for; images elsewhere are treated as public and pullable."""
    public: bool = True
    """Public registries (any host outside ``hosts``) are reachable; false for an air-gapped cluster."""

    def catalog_hosts(self) -> list[str]:
        """The hosts the catalog (or the real registry at ``url``) answers for."""
        hosts = list(self.hosts) or sorted({repo.split("/", 1)[0] for repo in self.catalog})
        if self.url:
            netloc = self.url.split("://", 1)[-1].rstrip("/")
            if netloc not in hosts:
                hosts.append(netloc)
        return hosts


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

    release: str = field(default_factory=lambda: list(release_lines().values())[-1])
    """The operator release; the newest bundled one unless the scenario names another."""
    namespace: str = "gpu-operator"
    installed: bool = True
    """Operator Deployment present (it reconciles ClusterPolicy / NVIDIADriver)."""
    crds: bool = True
    """The ClusterPolicy and NVIDIADriver CRDs are registered."""
    cluster_policy: dict[str, Any] | None = None
    """A ClusterPolicy already running (``existing-install``), as a full object."""
    repository: str = ""
    """Where the operator and its default operand images come from (``nvcr.io/nvidia`` when empty);
    an air-gapped install points this at its mirror."""
    helm_values: dict[str, Any] | None = None
    """The values the Helm release that installed the operator was given (``helm install --values``): the demo
    keeps them in Helm's release Secret, named for the ClusterPolicy's ``meta.helm.sh/release-name``."""


@dataclass
class WorkloadSpec:
    """A user's pod already running on a node (e.g. a training job using GPUs, which an upgrade evicts)."""

    name: str
    node: str
    namespace: str = "default"
    gpus: int = 1
    """``nvidia.com/gpu`` the pod's container asks for (0: a pod that uses no GPU)."""
    image: str = "nvcr.io/nvidia/cuda:12.8.0-base-ubuntu22.04"


@dataclass
class UpgradeSpec:
    """A driver upgrade already under way when the demo starts (``upgrade-in-progress``).

    Seeding runs the scenario's ClusterPolicy as given, then sets ``driver.version`` to ``to_version``
    and lets the simulated upgrade controller walk each node listed in ``states`` until it reaches
    its state (an ``upgrade-failed`` node fails on its own, e.g. its new image cannot be pulled).
    Once the demo runs, every node goes on from there, ``state_seconds`` per state.
    """

    to_version: str = ""
    states: dict[str, str] = field(default_factory=dict)
    """node name -> the ``nvidia.com/gpu-driver-upgrade-state`` it is in when the demo starts."""
    state_seconds: float = 0.0
    """How long a node stays in each upgrade state once the demo runs (a real state takes minutes)."""


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
    workloads: list[WorkloadSpec] = field(default_factory=list)
    """Pods of the cluster's users, already running when the demo starts."""
    nodelist: str = ""
    """A ``kubectl get nodes -o json`` file (relative to the scenario file) whose nodes are added."""
    upgrade: UpgradeSpec = field(default_factory=UpgradeSpec)
    """A driver upgrade frozen mid-way when the demo starts (empty: none)."""

    def expanded_nodes(self) -> list[NodeSpec]:
        """Every concrete node: ``count: N`` entries become ``<name>-01`` … ``<name>-N``."""
        out: list[NodeSpec] = []
        for spec in self.nodes:
            if spec.count == 1:
                out.append(spec)
                continue
            width = max(2, len(str(spec.count)))
            for i in range(1, spec.count + 1):
                copy = NodeSpec(**{**spec.__dict__, "name": f"{spec.name}-{i:0{width}d}", "count": 1})
                copy.labels = dict(spec.labels)
                copy.noexec_mounts = list(spec.noexec_mounts)
                copy.free_mb = dict(spec.free_mb)
                out.append(copy)
        return out


def _scenario_dir() -> Path:
    return Path(str(assets().joinpath("scenarios")))


def scenario_names() -> list[str]:
    """Names of the bundled scenarios (``assets/scenarios/*.yaml``), sorted."""
    folder = assets().joinpath("scenarios")
    return sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir() if p.name.endswith((".yaml", ".yml")))


OFFERED_VARIABLE = "GPU_WIZARD_DEMO_SCENARIOS"
"""Set by ``gpu-wizard serve`` for its sessions: the comma-separated scenarios a student may pick."""


def offered_scenarios() -> list[str]:
    """The scenarios the wizard offers: every bundled one, or in a classroom those the trainer allowed."""
    names = scenario_names()
    offered = os.environ.get(OFFERED_VARIABLE)
    if offered is None:
        return names
    allowed = [name.strip() for name in offered.split(",") if name.strip()]
    return [name for name in names if name in allowed] + [name for name in allowed if name not in names]


def check_offered(name_or_path: str) -> None:
    """ScenarioError unless the scenario is one the wizard offers here (a classroom's trainer decides)."""
    if OFFERED_VARIABLE in os.environ and name_or_path not in offered_scenarios():
        raise ScenarioError(
            f"scenario {name_or_path!r} is not offered in this classroom (offered: {', '.join(offered_scenarios())})"
        )


def _resolve_path(name_or_path: str) -> Path:
    candidate = Path(name_or_path).expanduser()
    looks_like_path = "/" in name_or_path or name_or_path.endswith((".yaml", ".yml", ".json"))
    if looks_like_path or candidate.is_file():
        if not candidate.exists():  # a FIFO or device is not is_file(): the bounded reader refuses it by name
            raise ScenarioError(f"scenario file {name_or_path!r} does not exist")
        return candidate
    path = _scenario_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ScenarioError(
            f"unknown scenario {name_or_path!r}; bundled scenarios: {', '.join(scenario_names())} "
            "(or give a path to a scenario .yaml file)"
        )
    return path


def load_scenario(name_or_path: str) -> Scenario:
    """Load, check and expand a scenario given by bundled name (``sle-micro-precompiled``) or path.

    Raises ScenarioError with a message naming the file and the offending field.
    """
    path = _resolve_path(name_or_path)
    try:
        data = load_bounded(path, SCENARIO, ("yaml",))
    except InputError as exc:
        line = f" line {exc.line}" if exc.line else ""
        verb = "is" if exc.message.startswith("not valid") else "cannot be used:"
        field = f" {exc.field}:" if exc.field else ""
        raise ScenarioError(f"scenario {str(path)!r}{line} {verb}{field} {exc.message}") from None
    return scenario_from_dict(data, source=str(path), base_dir=path.parent)


def scenario_from_dict(data: Any, *, source: str = "<dict>", base_dir: Path | None = None) -> Scenario:
    """Build a checked Scenario from already-parsed YAML/JSON data."""
    if not isinstance(data, dict):
        raise ScenarioError(f"scenario {source!r}: the top level must be a mapping of fields, not {_kind(data)}")
    where = f"scenario {source!r}"
    scenario: Scenario = build_dataclass(Scenario, data, where, "")
    if scenario.nodelist:
        scenario.nodes[:0] = _load_nodelist(scenario.nodelist, base_dir or Path.cwd(), where)
    check_scenario(scenario, where)
    return scenario


def _load_nodelist(ref: str, base_dir: Path, where: str) -> list[NodeSpec]:
    path = (base_dir / ref).expanduser()
    try:
        document = load_bounded(path, NODELIST, ("json",))
    except InputError as exc:
        if exc.message == "no such file":
            raise ScenarioError(f"{where}: nodelist: file {str(path)!r} does not exist") from None
        raise ScenarioError(f"{where}: nodelist: {exc}") from None
    return [NodeSpec(**fields) for fields in nodes_from_nodelist(document, f"{where}: nodelist {ref!r}")]


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"
