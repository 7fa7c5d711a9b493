"""Shared helpers for the demo-simulation tests: a seeded world, settling, ClusterPolicies, probe pods."""

from __future__ import annotations

from typing import Any

from wizard.demo.api.store import Store
from wizard.demo.scenarios.scenario import load_scenario, scenario_from_dict
from wizard.demo.sim.simulation import Simulation

NS = "gpu-operator"
SLE_KERNEL = "5.14.21-150500.55.166-default"
SLE_TAG = f"580.126.09.1-{SLE_KERNEL}-sle-micro5.5"
SLE_DIGEST = "sha256:e6da525dc703a4144b1b099762da5390adadc1a1a9863406e5deac48fb877aa4"
RUN_TOOLKIT = "/run/nvidia/toolkit-install"


def cluster_policy(
    name: str = "cluster-policy", toolkit_dir: str = "/usr/local/nvidia", **driver: Any
) -> dict[str, Any]:
    """A hand-written ClusterPolicy with every CRD-required section."""
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": name},
        "spec": {
            "operator": {"defaultRuntime": "containerd"},
            "daemonsets": {},
            "driver": {"enabled": True, **driver},
            "toolkit": {"enabled": True, "installDir": toolkit_dir},
            "validator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": "v26.7.0"},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": False},
            "gfd": {"enabled": False},
            "nodeStatusExporter": {"enabled": False},
        },
    }


SLE_POLICY = cluster_policy(
    toolkit_dir=RUN_TOOLKIT,
    usePrecompiled=True,
    repository="registry.example.com/mlops",
    image="nvidia-driver",
    version="580.126.09.1",
)
RKE2_CONTAINERD = "/var/lib/rancher/rke2/agent/etc/containerd"
#: The scenario runs on RKE2 (containerd 1.7): the toolkit needs RKE2's socket and drop-in folder.
RKE2_TOOLKIT_ENV = [
    {"name": "CONTAINERD_CONFIG", "value": f"{RKE2_CONTAINERD}/config.toml"},
    {"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"},
    {"name": "RUNTIME_CONFIG_SOURCE", "value": f"file={RKE2_CONTAINERD}/config.toml"},
    {"name": "RUNTIME_DROP_IN_CONFIG", "value": f"{RKE2_CONTAINERD}/config.toml.d/99-nvidia.toml"},
]
SLE_POLICY["spec"]["toolkit"]["env"] = RKE2_TOOLKIT_ENV


def world(scenario: str | dict[str, Any]) -> tuple[Simulation, Store]:
    """A seeded simulation of a bundled scenario (or one given as a dict)."""
    loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario_from_dict(scenario)
    store = Store()
    sim = Simulation(loaded, store)
    sim.seed()
    return sim, store


async def settle(sim: Simulation, limit: int = 150) -> int:
    """Tick until nothing changes; the number of ticks it took."""
    for count in range(1, limit + 1):
        if not await sim.tick():
            return count
    raise AssertionError(f"the simulation did not settle in {limit} ticks")


def pods_of(store: Store, app: str = "", component: str = "nvidia-driver") -> dict[str, dict[str, Any]]:
    """Operator pods by node name, selected by ``app`` or ``app.kubernetes.io/component``."""
    out = {}
    for pod in store.list("pods", NS):
        labels = pod["metadata"].get("labels") or {}
        if (app and labels.get("app") == app) or (not app and labels.get("app.kubernetes.io/component") == component):
            out[pod["spec"]["nodeName"]] = pod
    return out


def status_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod["status"]
    for cs in status.get("initContainerStatuses", []) + status.get("containerStatuses", []):
        if cs["name"] == container:
            return cs
    raise AssertionError(f"no status for {container}")


def waiting_reason(pod: dict[str, Any], container: str) -> str:
    return status_of(pod, container)["state"].get("waiting", {}).get("reason", "")


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


def probe_pod(node: str, command: list[str] | None = None, restart: str = "Always") -> dict[str, Any]:
    """A pod like the wizard's node probe: pinned to a node, host root mounted at /host."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"probe-{node}", "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": restart,
            "containers": [
                {
                    "name": "probe",
                    "image": "busybox:1.36",
                    "command": command or ["sleep", "3600"],
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }
