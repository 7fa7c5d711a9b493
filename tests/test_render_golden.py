"""Golden-file tests: every rendered output, per case, compared byte for byte with ``tests/golden/<case>/``.

Rewrite the files after an intended change with ``GOLDEN_UPDATE=1 pytest tests/test_render_golden.py``
and review the diff. Node facts come from NodeLists shaped like ``kubectl get nodes -o json``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from wizard.engine.facts import ClusterFacts, facts_from_nodelist
from wizard.engine.plan import Plan
from wizard.engine.render import (
    Rendered,
    advice_text,
    apply_patch,
    helm_yaml,
    images_table,
    mirror_script,
    render,
    to_yaml,
    validate_against_crd,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"
DIGEST = "sha256:" + "0123456789abcdef" * 4
NFD = "feature.node.kubernetes.io"

OS_IMAGES = {
    ("sle-micro", "5.5"): "SUSE Linux Enterprise Micro 5.5",
    ("ubuntu", "22.04"): "Ubuntu 22.04.5 LTS",
    ("ubuntu", "24.04"): "Ubuntu 24.04.2 LTS",
    ("rhel", "9.4"): "Red Hat Enterprise Linux 9.4 (Plow)",
    ("rhel", "10.1"): "Red Hat Enterprise Linux 10.1 (Coughlan)",
    ("rocky", "9.4"): "Rocky Linux 9.4 (Blue Onyx)",
}


def node(
    name: str,
    os_id: str = "ubuntu",
    version_id: str = "22.04",
    kernel: str = "5.15.0-1048-nvidia",
    *,
    gpu: str = "NVIDIA-H200",
    count: int = 8,
    extra_labels: dict[str, str] | None = None,
    kubelet: str = "v1.33.4",
    runtime: str = "containerd://1.7.27",
) -> dict[str, Any]:
    """A Node as ``kubectl get nodes -o json`` prints it (NFD labels; GPU labels unless ``gpu=""``).

    ``kubelet`` and ``runtime`` name the distribution (``v1.33.4+rke2r1``): they decide the toolkit env.
    """
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        f"{NFD}/kernel-version.full": kernel,
        f"{NFD}/system-os_release.ID": os_id,
        f"{NFD}/system-os_release.VERSION_ID": version_id,
        f"{NFD}/system-os_release.VERSION_ID.major": version_id.split(".")[0],
    }
    capacity = {"cpu": "64", "memory": "1056378736Ki", "pods": "110"}
    if gpu:
        labels |= {
            f"{NFD}/pci-10de.present": "true",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": gpu,
            "nvidia.com/gpu.count": str(count),
        }
        capacity["nvidia.com/gpu"] = str(count)
    labels |= extra_labels or {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": "10.42.0.0/24"},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {
                "architecture": "amd64",
                "containerRuntimeVersion": runtime,
                "kernelVersion": kernel,
                "kubeletVersion": kubelet,
                "operatingSystem": "linux",
                "osImage": OS_IMAGES.get((os_id, version_id), f"{os_id} {version_id}"),
            },
        },
    }


def nodelist(*nodes: dict[str, Any]) -> dict[str, Any]:
    """The ``kubectl get nodes -o json`` wrapper around some nodes."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(nodes)}


def facts(*nodes: dict[str, Any]) -> ClusterFacts:
    return facts_from_nodelist(nodelist(*nodes))


SLE_KERNEL = "5.14.21-150500.55.166-default"
RHEL_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
PREINSTALLED = {"nvidia.com/gpu.deploy.driver": "pre-installed"}
CP = node("cp-0", gpu="")  # a control-plane node without a GPU, in every case
RKE2 = {"kubelet": "v1.33.4+rke2r1", "runtime": "containerd://2.0.5-k3s1"}
K3S = {"kubelet": "v1.32.3+k3s1", "runtime": "containerd://1.7.26-k3s1"}

MIXED_NODES = (
    CP,
    node("gpu-a-0"),
    node("gpu-a-1"),
    node("gpu-b-0", "rhel", "9.4", RHEL_KERNEL, gpu="NVIDIA-L40S", count=4),
)
RHEL_NODES = (
    CP,
    node("gpu-0", "rhel", "9.4", RHEL_KERNEL),
    node("gpu-1", "rhel", "9.4", RHEL_KERNEL),
    node("gpu-2", "rocky", "9.4", "5.14.0-427.13.1.el9_4.x86_64"),
    node("gpu-3", "rhel", "10.1", "6.12.0-124.8.1.el10_1.x86_64"),
)


def _upstream(release: str = "v26.7.0", **driver: Any) -> dict[str, Any]:
    return {
        "operator": {"version": release},
        "mode": "upstream",
        "driver": {"version": "580.126.20", "repository": "registry.example.com/nvidia", **driver},
    }


#: case name -> (answers, nodes)
CASES: dict[str, tuple[dict[str, Any], tuple[dict[str, Any], ...]]] = {
    "sle-micro-precompiled": (
        {
            "operator": {"version": "v26.7.0"},
            "mode": "precompiled",
            "driver": {"version": "580.126.09.1", "repository": "registry.example.com/mlops"},
        },
        (
            node("cp-0", "sle-micro", "5.5", SLE_KERNEL, gpu="", **RKE2),
            node("gpu-h200-0", "sle-micro", "5.5", SLE_KERNEL, **RKE2),
            node("gpu-h200-1", "sle-micro", "5.5", SLE_KERNEL, **RKE2),
        ),
    ),
    "ubuntu-k3s-upstream": (
        _upstream(repository="nvcr.io/nvidia"),
        (node("k3s-server", gpu="", **K3S), node("gpu-0", **K3S), node("gpu-1", **K3S)),
    ),
    "ubuntu-upstream": (
        _upstream(repository="nvcr.io/nvidia"),
        (CP, node("gpu-0"), node("gpu-1"), node("gpu-2", kernel="5.15.0-118-generic")),
    ),
    "ubuntu-upstream-airgapped": (
        _upstream(
            repository="registry.local:5000/nvidia",
            airgapped=True,
            repoConfig={"configMapName": "repo-config"},
            imagePullSecrets=["regcred"],
        ),
        (CP, node("gpu-l40s-0", gpu="NVIDIA-L40S"), node("gpu-l40s-1", gpu="NVIDIA-L40S")),
    ),
    "upstream-digest": (
        _upstream(version=DIGEST, airgapped=True, repoConfig={"configMapName": "repo-config"}),
        (CP, node("gpu-0"), node("gpu-1", kernel="5.15.0-118-generic")),
    ),
    "preinstalled": (
        {"operator": {"version": "v26.7.0"}, "mode": "preinstalled"},
        (
            CP,
            node("gpu-a100-0", gpu="NVIDIA-A100-SXM4-80GB", extra_labels=PREINSTALLED),
            node("gpu-a100-1", gpu="NVIDIA-A100-SXM4-80GB", extra_labels=PREINSTALLED),
        ),
    ),
    "mixed-os-clusterpolicy": (_upstream(), MIXED_NODES),
    "mixed-os-nvidiadriver": (_upstream(useNvidiaDriverCRD=True), MIXED_NODES),
    "mixed-os-precompiled-nvidiadriver": (
        {
            "operator": {"version": "v26.7.0"},
            "mode": "precompiled",
            "driver": {"version": "580", "repository": "registry.example.com/mlops", "useNvidiaDriverCRD": True},
        },
        MIXED_NODES,
    ),
    "repoconfig-split-nvidiadriver": (
        _upstream(useNvidiaDriverCRD=True, airgapped=True, repoConfig={"configMapName": "repo-config"}),
        (CP, node("gpu-0"), node("gpu-1", "sle-micro", "5.5", SLE_KERNEL)),
    ),
    "rhel-v26.7.0": (_upstream("v26.7.0", useNvidiaDriverCRD=True), RHEL_NODES),
    "rhel-v26.3.3": (_upstream("v26.3.3", useNvidiaDriverCRD=True), RHEL_NODES),
    "rhel-v25.10.1": (_upstream("v25.10.1", useNvidiaDriverCRD=True), RHEL_NODES),
    "rhel-precompiled-v25.10.1": (
        {
            "operator": {"version": "v25.10.1"},
            "mode": "precompiled",
            "driver": {"version": "580", "repository": "registry.example.com/mlops"},
        },
        RHEL_NODES[:3],
    ),
}


def rendered(case: str) -> Rendered:
    """Render one golden case."""
    answers, nodes = CASES[case]
    return render(Plan.model_validate(answers), facts(*nodes))


def outputs(case: str) -> dict[str, str]:
    """File name -> text of every golden output of a case."""
    answers, nodes = CASES[case]
    plan = Plan.model_validate(answers)
    result = rendered(case)
    return {
        "clusterpolicy.yaml": to_yaml([result.cluster_policy]),
        "nvidiadrivers.yaml": to_yaml(result.nvidia_drivers),
        "patch.yaml": to_yaml([apply_patch(plan, facts(*nodes))]),
        "helm-values.yaml": helm_yaml(result),
        "mirror.txt": mirror_script(result.mirror),
        "images.tsv": images_table(result.node_images),
        "advice.txt": advice_text(result.advice),
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    folder = GOLDEN / case
    for name, text in outputs(case).items():
        path = folder / name
        if UPDATE:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            continue
        assert path.exists(), f"{path} is missing; run GOLDEN_UPDATE=1 pytest {__file__}"
        assert text == path.read_text(encoding="utf-8"), f"{case}/{name} differs from the golden file"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_documents_validate_against_their_release_crd(case: str) -> None:
    result = rendered(case)
    bundle = result.plan.operator.bundle
    for doc in result.documents():
        assert validate_against_crd(doc, bundle) == [], f"{case}: {doc['kind']} {doc['metadata']['name']}"


def test_every_golden_folder_is_a_case() -> None:
    """A renamed or removed case must not leave a stale folder behind."""
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == sorted(CASES)
