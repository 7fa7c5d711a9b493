"""What the lane's tests share: fake nodes as NFD would label them, answers per mode, a healthy host's
answers to the wizard's host probe, the wizard's CLI in-process, and polling the real cluster."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.realcluster import recording
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.kwokhost import HostFacts
from wizard.engine.operator_names import DRIVER_SELECTOR

DRIVER_LABEL, _, DRIVER_VALUE = DRIVER_SELECTOR.partition("=")

UBUNTU_KERNEL = "5.15.0-1048-nvidia"
SLE_KERNELS = ("5.14.21-150500.55.166-default", "5.14.21-150500.55.171-default")


def node(
    name: str, os_id: str, version_id: str, kernel: str, *, gpu: bool = True, product: str = "NVIDIA-H200"
) -> dict[str, Any]:
    """A node as NFD and the kubelet describe it (labels, node info); GPU nodes carry the PCI label."""
    labels = {
        "feature.node.kubernetes.io/kernel-version.full": kernel,
        "feature.node.kubernetes.io/system-os_release.ID": os_id,
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": version_id,
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": version_id.split(".")[0],
    }
    if gpu:
        labels |= {"feature.node.kubernetes.io/pci-10de.present": "true", "nvidia.com/gpu.product": product}
    else:
        labels["node-role.kubernetes.io/control-plane"] = "true"
    images = {
        "ubuntu": "Ubuntu 22.04.5 LTS",
        "sle-micro": "SUSE Linux Enterprise Micro 5.5",
        "rhel": "Red Hat Enterprise Linux 9.4",
    }
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {
            "nodeInfo": {
                "kernelVersion": kernel,
                "osImage": images.get(os_id, os_id),
                "containerRuntimeVersion": "containerd://1.7.23",
            },
            "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
        },
    }


def as_wizard(cluster: RealCluster) -> list[str]:
    return ["--kubeconfig", str(cluster.kubeconfig("wizard"))]


def healthy_host(toolkit_dir: str, *, driver_dir: bool = True, smi: str | None = None) -> HostFacts:
    """A healthy node's host (kwokhost answers every step the wizard's host probe asks from it): the toolkit's
    containerd drop-in under `toolkit_dir`, and with `smi` a working host driver whose nvidia-smi prints it.
    `driver_dir` is kept for the callers: which steps are asked is the wizard's business, not the host's."""
    del driver_dir
    return HostFacts(toolkit_dir=toolkit_dir, smi=smi or "")


def healthy_paths(answers: Path, toolkit_dir: str) -> HostFacts:
    """A healthy node's host for the Paths step's check: every folder exists, on a writable exec mount."""
    del answers
    return HostFacts(toolkit_dir=toolkit_dir)


def doctor_host(answers: Path, os_id: str, kernel: str, *, nouveau: bool) -> HostFacts:
    """A GPU node's host for `gpu-wizard doctor --answers ANSWERS`: no NVIDIA driver, Secure Boot off, no dkms,
    kernel headers installed, plenty of space, its distribution's package host resolving, healthy folders;
    `nouveau` loaded or not. The node's kernel is the one it was created with (RealCluster.kernels)."""
    from wizard.engine.answers import load_answers

    del os_id, kernel
    plan = load_answers(answers)[0]
    assert plan.toolkit.installDir, "the answers name the toolkit folder: the path steps depend on it"
    return HostFacts(nouveau=nouveau, toolkit_dir=plan.toolkit.installDir)


def wait_for(what: str, probe: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f} s: {what}")


def daemonsets(cluster: RealCluster) -> dict[str, dict[str, Any]]:
    items = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets")["items"]
    return {d["metadata"]["name"]: d for d in items}


def driver_daemonsets(cluster: RealCluster) -> dict[str, dict[str, Any]]:
    return {
        name: ds
        for name, ds in daemonsets(cluster).items()
        if ds["metadata"].get("labels", {}).get(DRIVER_LABEL) == DRIVER_VALUE
    }


def container(ds: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == name]
    return found


def policy_state(cluster: RealCluster) -> str:
    items = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    return str(((items[0] if items else {}).get("status") or {}).get("state") or "")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def record_or_check(
    cluster: RealCluster,
    flow: str,
    nodes: list[dict[str, Any]],
    answers: Path,
    host: str,
    after: dict[str, Any] | None = None,
    before: Path | None = None,
) -> None:
    """Records what the real operator made of this flow (GPU_WIZARD_RECORD=1), or checks it still makes
    the same: the operand DaemonSets' view and the CRs' states (tests/realcluster/recording.py). `after` is a
    merge patch of the ClusterPolicy written after the wizard's apply (by another tool), `before` the answers the
    wizard applied first (a change of plan): the replay does the same."""
    items = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets")["items"]
    drivers = cluster.get("/apis/nvidia.com/v1alpha1/nvidiadrivers")["items"]
    document = {
        "release": cluster.release,
        "flow": flow,
        "nodes": nodes,
        "answers": answers.read_text().replace(host, recording.REGISTRY) if host else answers.read_text(),
        "daemonsets": recording.daemonsets_view(items, host, recording.stable_names(items)),
        "status": {
            "clusterPolicy": policy_state(cluster),
            "nvidiaDrivers": sorted(str((d.get("status") or {}).get("state") or "") for d in drivers),
        },
    }
    if after is not None:
        document["after"] = after
    if before is not None:
        text = before.read_text()
        document["before"] = text.replace(host, recording.REGISTRY) if host else text
    if recording.recording_wanted():
        recording.save(cluster.release, flow, document)
        return
    where = recording.path(cluster.release, flow)
    assert where.is_file(), f"no recording {where}: make one with GPU_WIZARD_RECORD=1 make test-real"
    stored = recording.load(cluster.release, flow)
    assert document["daemonsets"] == stored["daemonsets"], f"the real operator's DaemonSets differ from {where}"
    assert document["status"] == stored["status"], f"the CRs' states differ from {where}: {document['status']}"


UPSTREAM_VERSION = "580.126.20"


def upstream_answers(
    folder: Path, release: str, host: str, *, version: str = UPSTREAM_VERSION, extra: str = ""
) -> Path:
    """An upstream plan pulling `<host>/nvidia/driver:<version>-<os>`; `extra` adds lines under `driver:`."""
    return write(
        folder / "answers.yaml",
        f"version: 1\noperator:\n  version: {release}\nmode: upstream\n"
        f"driver:\n  version: '{version}'\n  repository: {host}/nvidia\n  image: driver\n  source: {host}/nvidia\n"
        f"{extra}toolkit:\n  installDir: /usr/local/nvidia\n",
    )


def wait_settled(cluster: RealCluster, timeout: float = 180) -> None:
    """Until the ClusterPolicy has read `ready` for 5 s in a row. The real operator reports `ready` for a
    moment while an operand DaemonSet it just created still wants 0 pods (a DaemonSet with nothing
    scheduled counts as ready), then `notReady` until the pods run: gpu-wizard's rollout can end on that
    first `ready` (docs/real-cluster.md)."""
    deadline = time.monotonic() + timeout
    since = None
    while time.monotonic() < deadline:
        if policy_state(cluster) in ("ready", ""):
            since = since or time.monotonic()
            if time.monotonic() - since >= 5:
                return
        else:
            since = None
        time.sleep(0.5)
    raise AssertionError(f"the ClusterPolicy did not stay ready within {timeout:.0f} s: {policy_state(cluster)}")
