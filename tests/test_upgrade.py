"""Guided upgrades: who owns the policy, the upgrade plan per node group, ``upgrade`` and ``check-kernel``.

The engine's rules are tested as tables; the commands run against the demo cluster over real HTTPS
(``--demo``), where the scenario's catalog is the registry the images are checked in.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.engine.facts import ClusterFacts, NodeFacts
from wizard.engine.mirror import NodeImage
from wizard.engine.ownership import helm_upgrade_command, ownership_of
from wizard.engine.plan import Plan
from wizard.engine.upgrade import (
    UpgradePolicy,
    UpgradePolicyError,
    gpu_requests,
    plan_upgrade,
    upgrade_target,
    workloads_by_node,
)

HELM_META = {
    "name": "cluster-policy",
    "labels": {"app.kubernetes.io/managed-by": "Helm"},
    "annotations": {"meta.helm.sh/release-name": "gpu-op", "meta.helm.sh/release-namespace": "nvidia"},
}


@pytest.mark.parametrize(
    ("metadata", "manager", "release"),
    [
        (HELM_META, "helm", "gpu-op"),
        ({"name": "p", "labels": {"app.kubernetes.io/managed-by": "Helm"}}, "helm", "gpu-operator"),
        (
            {
                "name": "p",
                "ownerReferences": [{"kind": "ClusterServiceVersion", "name": "gpu-operator-certified.v26.7.0"}],
            },
            "olm",
            "gpu-operator-certified.v26.7.0",
        ),
        ({"name": "p", "labels": {"app.kubernetes.io/managed-by": "kubectl"}}, "none", ""),
        ({"name": "p"}, "none", ""),
    ],
)
def test_ownership_from_metadata(metadata: dict[str, object], manager: str, release: str) -> None:
    owner = ownership_of({"metadata": metadata})
    assert (owner.manager, owner.release) == (manager, release)
    assert bool(owner.why_not_apply()) is (manager != "none")


def test_no_live_policy_is_owned_by_nobody() -> None:
    assert ownership_of(None).manager == "none"


def test_helm_command_is_quoted_and_keeps_the_release_values() -> None:
    owner = ownership_of({"metadata": HELM_META})
    command = helm_upgrade_command(owner, "v26.7.0", "/tmp/my values.yaml")
    assert command == (
        "helm upgrade gpu-op nvidia/gpu-operator -n nvidia --version v26.7.0 --reuse-values -f '/tmp/my values.yaml'"
    )


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ({"maxUnavailable": "120%"}, "maxUnavailable"),
        ({"maxUnavailable": "a lot"}, "maxUnavailable"),
        ({"maxUnavailable": "２５%"}, "maxUnavailable"),
        ({"maxParallelUpgrades": -1}, "maxParallelUpgrades"),
        ({"maxParallelUpgrades": "1"}, "maxParallelUpgrades"),
        ({"maxParallelUpgrades": True}, "maxParallelUpgrades"),
        ({"drain": {"enable": True, "timeoutSeconds": -5}}, "drain.timeoutSeconds"),
    ],
)
def test_invalid_upgrade_policy_names_the_field(spec: dict[str, object], error: str) -> None:
    with pytest.raises(UpgradePolicyError, match=error):
        UpgradePolicy.from_spec(spec)


@pytest.mark.parametrize(
    ("spec", "nodes", "parallel"),
    [
        ({}, 10, 1),
        ({"maxParallelUpgrades": 0, "maxUnavailable": "25%"}, 10, 3),  # ceil(2.5)
        ({"maxParallelUpgrades": 0, "maxUnavailable": "100%"}, 10, 10),
        ({"maxParallelUpgrades": 4, "maxUnavailable": 2}, 10, 2),
        ({"maxParallelUpgrades": 4, "maxUnavailable": "50%"}, 3, 2),
    ],
)
def test_nodes_upgraded_at_once(spec: dict[str, object], nodes: int, parallel: int) -> None:
    assert UpgradePolicy.from_spec(spec).parallel(nodes) == parallel


def _plan(release: str, version: str) -> Plan:
    return Plan.model_validate(
        {
            "version": 1,
            "operator": {"version": release},
            "mode": "upstream",
            "driver": {"version": version, "repository": "nvcr.io/nvidia"},
        }
    )


def _images(plan: Plan, tag_os: str) -> list[NodeImage]:
    return [
        NodeImage(node, "5.14.0-427.el9", tag_os, f"nvcr.io/nvidia/driver:{plan.driver.version}-{tag_os}")
        for node in ("gpu-1", "gpu-2", "gpu-3")
    ]


def test_upgrade_plan_groups_nodes_and_names_the_os_tag_change() -> None:
    current = _plan("v26.3.3", "570.195.03")
    target = upgrade_target(current, driver_version="580.126.20", operator_release="v26.7.0")
    plan = plan_upgrade(
        current,
        target,
        _images(current, "rhel9.4"),
        _images(target, "rhel9"),
        {"maxParallelUpgrades": 1},
        {"gpu-1": ["ml/train"], "cpu-9": ["x/y"]},
    )
    assert len(plan.groups) == 1 and plan.groups[0].changes
    assert plan.groups[0].old_image.endswith("570.195.03-rhel9.4") and plan.groups[0].new_image.endswith(
        "580.126.20-rhel9"
    )
    assert plan.os_tag_changes() == ["rhel9.4 → rhel9 (the naming rule of operator v26.7.0)"]
    assert plan.evictions == {"gpu-1": ["ml/train"]}  # only nodes that change
    assert plan.estimate_minutes() == 18.0  # three waves of one node


def test_no_change_means_no_waves_and_no_evictions() -> None:
    current = _plan("v26.7.0", "580.126.20")
    plan = plan_upgrade(current, current, _images(current, "ubuntu22.04"), _images(current, "ubuntu22.04"), {})
    assert plan.changing_nodes == [] and plan.estimate_minutes() == 0.0


def test_a_driver_version_the_plan_rejects_is_a_validation_error() -> None:
    with pytest.raises(ValueError, match="driver"):
        upgrade_target(_plan("v26.7.0", "580.126.20"), driver_version="580;rm")


def _node(name: str, gpu: bool) -> NodeFacts:
    return NodeFacts(name, "5.15.0", "nfd", "ubuntu", "22.04", "nfd", "Ubuntu 22.04", gpu, "", 8 * gpu, "", "")


def test_gpu_workloads_by_node() -> None:
    def pod(name: str, node: str, limits: dict[str, str], phase: str = "Running") -> dict[str, object]:
        return {
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"limits": limits}}]},
            "status": {"phase": phase},
        }

    pods = [
        pod("a", "gpu-1", {"nvidia.com/gpu": "2"}),
        pod("b", "gpu-1", {"cpu": "1"}),
        pod("c", "gpu-2", {"nvidia.com/mig-1g.10gb": "1"}),
        pod("d", "gpu-2", {"nvidia.com/gpu": "1"}, phase="Succeeded"),
        pod("e", "cpu-1", {"nvidia.com/gpu": "1"}),
    ]
    facts = ClusterFacts([_node("gpu-1", True), _node("gpu-2", True), _node("cpu-1", False)])
    assert gpu_requests(pods[0]) == 2 and gpu_requests(pods[1]) == 0
    assert workloads_by_node(pods, facts) == {"gpu-1": ["ml/a"], "gpu-2": ["ml/c"]}


def test_upgrade_dry_run_on_a_helm_install_prints_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "upgrade", "--driver", "580.126.20", "--dry-run", "--demo", "existing-install")
    assert code == 0, err
    assert "driver 570.195.03 → 580.126.20 (operator v26.3.3)" in out
    assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in out
    assert "now    nvcr.io/nvidia/driver:570.195.03-ubuntu22.04  ✓ in the registry" in out
    assert "after  nvcr.io/nvidia/driver:580.126.20-ubuntu22.04  ✓ in the registry" in out
    assert "gpu-a100-01: ml-team/train-llm-0" in out and "research/notebook-ana" in out
    assert "metrics-agent" not in out  # uses no GPU: not evicted
    assert "maxParallelUpgrades 1" in out and "about 18 min" in out
    assert "dry run: nothing was changed" in err


def test_upgrade_refuses_while_the_new_image_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "upgrade", "--driver", "590.10.01", "--dry-run", "--demo", "existing-install-plain")
    assert code == 1
    assert "after  nvcr.io/nvidia/driver:590.10.01-ubuntu22.04  ✗ missing" in out
    assert "Owner:" not in out  # nobody manages the hand-made policy
    assert "the upgrade is refused while a new image is missing" in err


def test_upgrade_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "upgrade", "--driver", "580.126.20", "--dry-run", "-o", "json", "--demo", "existing-install"
    )
    doc = json.loads(out)
    assert code == 0 and doc["owner"] == {"manager": "helm", "release": "gpu-operator"}
    assert doc["groups"][0]["toStatus"]["exists"] is True and doc["estimateMinutes"] == 18.0


@pytest.mark.parametrize("version", ["580;rm", "latest"])
def test_upgrade_bad_version_is_one_line(capsys: pytest.CaptureFixture[str], version: str) -> None:
    code, out, err = run(capsys, "upgrade", "--driver", version, "--dry-run", "--demo", "existing-install")
    assert code == 2 and not out and "Traceback" not in err
    assert err.splitlines()[-1].startswith("gpu-wizard: error: --driver/--operator: driver.version")


def test_check_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    answers = "assets/examples/sle-micro-precompiled.answers.yaml"
    base = ["check-kernel", "--demo", "sle-micro-precompiled", "--answers", answers]
    code, out, _ = run(capsys, *base[:1], "5.14.21-150500.55.166-default", *base[1:])
    assert code == 0 and "in the registry (catalog: validated)" in out
    code, out, _ = run(capsys, *base[:1], "5.14.21-150500.55.200-default", *base[1:])
    assert code == 1 and "-5.14.21-150500.55.200-default-sle-micro5.5: not in the registry" in out
    assert "Subject: precompiled NVIDIA driver image wanted for kernel 5.14.21-150500.55.200-default" in out
    code, out, _ = run(capsys, *base[:1], "5.14.21-150500.55.166-default", *base[1:], "--os", "sles:15.6")
    assert code == 1 and "sle-micro" not in out.split("\n")[0] and "sles15.6" in out


@pytest.mark.parametrize("kernel", ["5.1\n$(id)", "../etc", "5.15 0", "", "５.15"])
def test_check_kernel_refuses_what_cannot_be_a_tag(capsys: pytest.CaptureFixture[str], kernel: str) -> None:
    code, out, err = run(capsys, "check-kernel", kernel, "--demo", "sle-micro-precompiled")
    assert code == 2 and not out and err.startswith("gpu-wizard: error: KERNEL:")


def test_kernel_drift_rules() -> None:
    from wizard.engine.kernel_drift import kernel_drift

    nodes = ClusterFacts([_node("gpu-1", True), _node("gpu-2", True), _node("gpu-3", True)])
    images = {
        "gpu-1": ("r.io/d:580.126.09.1-5.15.0-ubuntu22.04", ""),  # the node's kernel: fine
        "gpu-2": ("r.io/d:580.126.09.1-5.15.0-1048-nvidia-ubuntu22.04", ""),  # another kernel (a prefix is no match)
        "gpu-3": ("r.io/d:580.126.20-ubuntu22.04", "ImagePullBackOff"),  # upstream: never a kernel question
    }
    assert [(d.node, d.pull_failed) for d in kernel_drift(nodes, images)] == [("gpu-2", False)]
    images["gpu-1"] = (images["gpu-1"][0], "ImagePullBackOff")  # built for the kernel, but not there
    assert [(d.node, d.pull_failed) for d in kernel_drift(nodes, images)] == [("gpu-1", True), ("gpu-2", False)]


def test_discover_names_a_node_whose_kernel_moved_under_its_driver(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    answers = "assets/examples/sle-micro-precompiled.answers.yaml"
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code, _, err = run(capsys, "apply", "--answers", answers, *kube, "--yes", "--backup-dir", str(tmp_path))
    assert code == 0, err
    code, _, err = run(capsys, "discover", *kube)
    assert code == 0 and "kernel drift" not in err
    node = demo.store.get("nodes", "gpu-h200-01")
    assert node is not None
    new = "5.14.21-150500.55.171-default"  # an OS update the driver image was not built for
    node["status"]["nodeInfo"]["kernelVersion"] = new
    node["metadata"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] = new
    demo.store.update("nodes", node)
    # the operator moves the node to a DaemonSet for its new kernel, whose image is not in the registry
    deadline = time.monotonic() + 30
    while True:
        code, out, err = run(capsys, "discover", *kube, "-o", "json")
        drift = json.loads(out)["kernelDrift"]
        if drift or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert code == 0 and [d["node"] for d in drift] == ["gpu-h200-01"] and drift[0]["kernel"] == new
    assert f"! kernel drift: gpu-h200-01 runs kernel {new}" in err and f"check-kernel {new}" in err


def test_discover_check_hosts_finds_a_preinstalled_driver(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "discover", "--demo", "preinstalled")
    assert code == 0 and "suggested mode: upstream" in out  # no label before the operator runs
    code, out, _ = run(capsys, "discover", "--demo", "preinstalled", "--check-hosts", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["recommendedMode"]["value"] == "preinstalled"
    assert {n["name"]: n.get("hostDriver") for n in doc["nodes"] if n["gpu"]} == {
        "gpu-l40s-01": "580.126.20",
        "gpu-l40s-02": "580.126.20",
    }


def test_a_new_image_only_in_its_mirror_source_gets_the_copy_command() -> None:
    """The plan names what to run before the upgrade can go: the skopeo copy of each mirrorable new image."""
    from tests.helpers.render_cases import CP, facts, node
    from wizard.cluster.upgrading.upgrades import UpgradeReport, mirror_commands, report_lines
    from wizard.engine.ownership import Ownership
    from wizard.engine.render import render
    from wizard.registry.client import TagStatus
    from wizard.registry.images import ImageStatus

    nodes = facts(CP, node("gpu-0"))
    answers = {"driver": {"version": "570", "repository": "registry.example.com/mlops"}}
    current = Plan.model_validate(answers)
    target = upgrade_target(current, driver_version="580")
    before, after = render(current, nodes), render(target, nodes)
    upgrade = plan_upgrade(current, target, before.node_images, after.node_images, None)
    report = UpgradeReport(upgrade, before, after, Ownership("none"), None, registry_checked=True)
    for rendered, found in ((before, True), (after, False)):
        for item in rendered.mirror:
            status = ImageStatus(
                item.target, item.nodes, "", "", TagStatus(item.target, found), TagStatus(item.source, True)
            )
            (report.old_images if found else report.new_images)[item.target] = status
    (command,) = mirror_commands(report)
    assert command.startswith("skopeo copy --all --preserve-digests docker://docker.io/alaudadockerhub/")
    assert command.endswith(f"docker://{after.mirror[0].target}")
    lines = report_lines(report)
    assert f"mirror: {command}" in lines
    assert any("after  " in line and "✗ not in the registry yet; its mirror source exists" in line for line in lines)
