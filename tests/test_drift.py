"""``gpu-wizard drift --answers FILE`` (issue 36, item 2) on the demo cluster over real HTTPS, its registry asked as
the nodes pull: silent on a cluster that matches its plan; finds a changed driver version, a node whose kernel
has no image, a driver pod running a foreign image and a node on another OS than its image's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.demo import ClusterFactory

ANSWERS = Path(__file__).resolve().parent.parent / "assets" / "examples" / "sle-micro-precompiled.answers.yaml"
IMAGE = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"


@pytest.fixture
def installed(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[object, list[str]]:
    demo = demo_cluster("sle-micro-precompiled")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code, _, err = run(capsys, "apply", "--answers", str(ANSWERS), *kube, "--yes", "--backup-dir", str(tmp_path))
    assert code == 0, err
    return demo, kube


def test_silent_on_a_matching_cluster_and_a_changed_driver_version_is_one_line(
    installed: tuple[object, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, kube = installed
    code, out, _ = run(capsys, "drift", "--answers", str(ANSWERS), *kube)
    assert (code, out) == (0, f"✓ no drift: 3 objects and GPU nodes match {ANSWERS}\n")
    code, out, _ = run(capsys, "drift", "--answers", str(ANSWERS), *kube, "-o", "json")
    assert code == 0 and json.loads(out)["drift"] == []

    newer = tmp_path / "newer.yaml"
    newer.write_text(ANSWERS.read_text(encoding="utf-8").replace('"580.126.09.1"', '"580.126.09.2"'), encoding="utf-8")
    code, out, _ = run(capsys, "drift", "--answers", str(newer), *kube)
    assert code == 1
    assert out.splitlines()[0] == (
        "✗ spec: ClusterPolicy/cluster-policy spec.driver.version: the plan says 580.126.09.2, the cluster has 580.126.09.1"
    )
    assert f"✗ foreign-image gpu-h200-01: its driver pod runs {IMAGE}, the plan says " in out
    code, out, _ = run(capsys, "drift", "--answers", str(newer), *kube, "-o", "json", "--no-registry")
    doc = json.loads(out)
    field = [d for d in doc["drift"] if d["check"] == "spec"]
    assert code == 1 and doc["exitCode"] == 1
    assert field == [
        {
            "check": "spec",
            "node": None,
            "object": "ClusterPolicy/cluster-policy",
            "field": "spec.driver.version",
            "plan": "580.126.09.2",
            "live": "580.126.09.1",
            "message": field[0]["message"],
            "hint": field[0]["hint"],
        }
    ]


def test_a_kernel_without_an_image_and_a_foreign_image(
    installed: tuple[object, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    demo, kube = installed
    store = demo.store  # type: ignore[attr-defined]
    node = store.get("nodes", "gpu-h200-01")
    new = "5.14.21-150500.55.171-default"  # an OS update no image was built for
    node["status"]["nodeInfo"]["kernelVersion"] = new
    node["metadata"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] = new
    store.update("nodes", node)
    (pod,) = [
        p for p in store.list("pods", "gpu-operator")
        if p["spec"].get("nodeName") == "gpu-h200-02" and p["metadata"]["name"].startswith("nvidia-driver-daemonset")
    ]  # fmt: skip
    foreign = IMAGE.replace("registry.example.com/mlops", "quay.io/someone")
    for container in pod["spec"]["containers"]:
        if container["name"] == "nvidia-driver-ctr":
            container["image"] = foreign
    store.update("pods", pod)
    code, out, _ = run(capsys, "drift", "--answers", str(ANSWERS), *kube)
    assert code == 1
    lines = out.splitlines()
    assert (
        f"✗ no-image gpu-h200-01: kernel {new} (sle-micro5.5): "
        f"registry.example.com/mlops/nvidia-driver:580.126.09.1-{new}-sle-micro5.5 is not in the registry" in lines
    )
    assert f"✗ foreign-image gpu-h200-02: its driver pod runs {foreign}, the plan says {IMAGE}" in lines
    assert lines[-1] == f"drift: {len(lines) - 1} difference(s) from {ANSWERS}", out


def test_a_node_on_another_os_than_the_clusterpolicy_image(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("mixed-os")
    answers = tmp_path / "upstream.yaml"
    answers.write_text("version: 1\nmode: upstream\ndriver:\n  version: '580.126.20'\n  repository: nvcr.io/nvidia\n")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube, "--no-registry")
    assert code == 1
    assert "✗ new-os gpu-03: runs rhel9, but the ClusterPolicy gives every GPU node the ubuntu22.04 image" in out


def test_nvidiadriver_crs_silent_when_matching_then_a_changed_and_an_extra_cr(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("mixed-os")
    answers = tmp_path / "crd.yaml"
    answers.write_text(
        "version: 1\nmode: upstream\n"
        "driver:\n  version: '580.126.20'\n  repository: nvcr.io/nvidia\n  useNvidiaDriverCRD: true\n"
    )
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code, _, err = run(capsys, "apply", "--answers", str(answers), *kube, "--yes", "--backup-dir", str(tmp_path))
    assert code == 0, err
    demo.settle()
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube)
    assert code == 0 and out.startswith("✓ no drift: 5 objects and GPU nodes match"), out  # policy, CR, 3 nodes

    live = demo.store.get("nvidiadrivers", "default")
    assert live is not None
    live["spec"]["version"] = "580.126.09"  # changed by hand
    demo.store.update("nvidiadrivers", live)
    extra = {k: v for k, v in live.items() if k in ("apiVersion", "kind", "spec")}
    demo.store.create("nvidiadrivers", {**extra, "metadata": {"name": "someone-elses"}})
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube, "--no-registry")
    lines = out.splitlines()
    assert code == 1
    assert "✗ spec: NVIDIADriver/default spec.version: the plan says 580.126.20, the cluster has 580.126.09" in lines
    assert "✗ object: NVIDIADriver/someone-elses: in the cluster, not in the plan" in lines


def test_object_drift_compares_only_what_the_plan_sets_as_the_server_echoes_it() -> None:
    """The pure rule: a number the server echoes as a string, an empty setting it leaves out and the fields the
    plan leaves to the operator are no drift; a list that differs is one line with both values."""
    from wizard.engine.drift import object_drift

    planned = {
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {
            "driver": {"version": "580.126.20", "imagePullSecrets": [], "env": [{"name": "A", "value": "1"}]},
            "daemonsets": {"rollingUpdate": {"maxUnavailable": 1}},
            "toolkit": {"enabled": True},
        },
    }
    live: dict[str, Any] = {
        "metadata": {"name": "cluster-policy", "uid": "x"},
        "spec": {
            "driver": {"version": "580.126.20", "env": [{"name": "A", "value": "1"}], "licensingConfig": {}},
            "daemonsets": {"rollingUpdate": {"maxUnavailable": "1"}},
            "toolkit": {"enabled": "true", "version": "v1.18.0"},
        },
        "status": {"state": "ready"},
    }
    (check,) = object_drift([planned], [live], [])
    assert check.ok and check.message == "ClusterPolicy/cluster-policy: every field the plan sets matches"
    live["spec"]["driver"]["env"] = [{"name": "A", "value": "2"}]
    (check,) = object_drift([planned], [live], [])
    assert not check.ok and check.data["field"] == "spec.driver.env"
    assert check.message == (
        'ClusterPolicy/cluster-policy spec.driver.env: the plan says [{"name": "A", "value": "1"}], '
        'the cluster has [{"name": "A", "value": "2"}]'
    )
    (check,) = object_drift([planned], [], [])
    assert check.message == "ClusterPolicy/cluster-policy: in the plan, not in the cluster"
