"""Mode changes leave nothing behind: the driver DaemonSets the operator leaves are part of the plan.

The real operator (v25.10.1, v26.3.3, v26.7.0: ``DaemonSet()``'s state-disabled branch) deletes only
``nvidia-driver-daemonset`` when the driver is disabled, so a precompiled install switched to pre-installed
keeps its per-kernel DaemonSet and driver pods with the ClusterPolicy ``ready``. The demo's operator does the
same; gpu-wizard names the DaemonSet in the preview, deletes it with the apply, keeps it in the backup and
re-creates it on rollback; the rollout never says ready over it and verify names it. On the demo over HTTPS.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import by_node, collect, connected, preinstalled_plan, scenario
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory, PausableSimulation
from wizard.cli.main import main
from wizard.cluster.applying.backup import read_backup
from wizard.cluster.facade import Cluster
from wizard.cluster.gateway.base import FIELD_MANAGER
from wizard.demo.sim.simulation import Simulation
from wizard.engine.answers import save_answers
from wizard.engine.plan import Plan
from wizard.engine.render import render

NAMESPACE = "gpu-operator"
PER_KERNEL = "nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04"
LEFT = "left by the operator when the driver is disabled (it deletes only nvidia-driver-daemonset)"


def precompiled_plan() -> Plan:
    """Precompiled 580 on the ``ubuntu-upstream`` scenario's Ubuntu 22.04 nodes (kernel 5.15.0-1048-nvidia)."""
    return Plan.model_validate(
        {"mode": "precompiled", "driver": {"version": "580", "repository": "nvcr.io/nvidia", "image": "driver"}}
    )


def _daemonsets(demo: DemoClusterThread) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in demo.store.list("daemonsets", NAMESPACE)}


def _driver_pods(demo: DemoClusterThread) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in demo.store.list("pods", NAMESPACE)
        if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/component") == "nvidia-driver"
    )


async def _precompiled_then_host_drivers(demo: DemoClusterThread, cluster: Cluster, tmp_path: Path) -> None:
    """Precompiled rolled out (a driver pod per GPU node), then a driver installed on every GPU host."""
    plan = precompiled_plan()
    prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
    assert prepared.ok, prepared.errors
    await cluster.apply(prepared, backup_dir=tmp_path / "first")
    states = [s async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
    assert states[-1].phase == "ready", states[-1].message
    assert PER_KERNEL in _daemonsets(demo) and len(_driver_pods(demo)) == 3
    # The person installs the host driver they switch to (the driver pods' init containers have long finished:
    # the driver manager does not look again).
    sim = demo.cluster.sim
    assert isinstance(sim, Simulation)
    for spec in sim.specs.values():
        if spec.gpu:
            spec.host_driver = "580.126.20"


async def _disable_driver_by_hand(demo: DemoClusterThread, cluster: Cluster) -> None:
    """``driver.enabled: false`` written as another tool would (a Helm upgrade, kubectl edit), then the operator's turn."""
    policy = await cluster.gateway.get_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    assert policy is not None
    policy["spec"]["driver"]["enabled"] = False
    await cluster.gateway.replace_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy", policy)
    demo.settle()


async def test_the_demo_operator_deletes_only_the_common_daemonset_when_the_driver_is_disabled(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """Upstream switched to pre-installed: ``nvidia-driver-daemonset`` goes, nothing is left for the apply."""
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        plan = Plan.model_validate(
            {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia", "image": "driver"}}
        )
        await cluster.apply(await cluster.prepare_apply(render(plan, await cluster.discover())), backup_dir=tmp_path)
        states = [s async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message
        assert "nvidia-driver-daemonset" in _daemonsets(demo)
        await _disable_driver_by_hand(demo, cluster)
        assert not any(name.startswith("nvidia-driver-daemonset") for name in _daemonsets(demo))
        prepared = await cluster.prepare_apply(render(preinstalled_plan(), await cluster.discover()))
        assert prepared.ok and prepared.leftovers == []


async def test_precompiled_to_preinstalled_deletes_the_leftover_with_the_apply(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        await _precompiled_then_host_drivers(demo, cluster, tmp_path)
        plan = preinstalled_plan()
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert prepared.ok, prepared.errors
        assert prepared.deletions == [f"delete DaemonSet {NAMESPACE}/{PER_KERNEL}, {LEFT}"]
        result = await cluster.apply(prepared, backup_dir=tmp_path / "b", allow_unverified_preinstalled=True)
        assert result.ok and result.deleted == [f"DaemonSet/{NAMESPACE}/{PER_KERNEL}"], result.message
        assert f"deleted DaemonSet {NAMESPACE}/{PER_KERNEL}, {LEFT}" in result.message
        backup = read_backup(result.backup_path)
        saved = [o for o in backup.objects if o["kind"] == "DaemonSet"]
        assert [o["metadata"]["name"] for o in saved] == [PER_KERNEL]
        assert "status" not in saved[0] and "uid" not in saved[0]["metadata"]

        states = [s async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
        assert (states[-1].phase, states[-1].message) == ("ready", "ClusterPolicy ready")
        demo.settle()
        assert PER_KERNEL not in _daemonsets(demo) and _driver_pods(demo) == []

        # the same plan again: nothing left to delete, nothing to write
        again = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert again.ok and again.leftovers == [] and not again.changed


async def test_rollback_recreates_the_deleted_daemonset(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("ubuntu-upstream", simulation=PausableSimulation)
    async with connected(demo) as cluster:
        await _precompiled_then_host_drivers(demo, cluster, tmp_path)
        before = _daemonsets(demo)[PER_KERNEL]
        prepared = await cluster.prepare_apply(render(preinstalled_plan(), await cluster.discover()))
        result = await cluster.apply(prepared, backup_dir=tmp_path / "b", allow_unverified_preinstalled=True)
        assert result.ok
        demo.settle()
        assert PER_KERNEL not in _daemonsets(demo)
        sim = demo.cluster.sim
        assert isinstance(sim, PausableSimulation)
        sim.paused = True  # no operator: what is back is the rollback's doing, once the operator's grace is over
        lines = await cluster.rollback(result.backup_path, operator_grace=0.5)
        assert lines == ["restored ClusterPolicy/cluster-policy", f"re-created DaemonSet/{NAMESPACE}/{PER_KERNEL}"]
        back = _daemonsets(demo)[PER_KERNEL]
        assert back["spec"] == before["spec"]
        assert FIELD_MANAGER in {f["manager"] for f in back["metadata"].get("managedFields") or []}
        owners = [
            {k: v for k, v in r.items() if k != "blockOwnerDeletion"} for r in before["metadata"]["ownerReferences"]
        ]
        assert back["metadata"]["ownerReferences"] == owners  # the same owner: it goes with the policy
        policy = demo.store.get("clusterpolicies", "cluster-policy")
        assert policy is not None and policy["spec"]["driver"]["enabled"] is not False
        sim.paused = False


async def test_rollback_leaves_a_daemonset_the_restored_policy_makes_to_the_operator(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The restored precompiled policy has the operator make the per-kernel DaemonSet again: the rollback waits for
    it rather than racing the operator (which deletes a precompiled DaemonSet that wants no pod yet and makes its
    own; on the real v25.10.1 operator that left the policy notReady past three minutes once in a run)."""
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        await _precompiled_then_host_drivers(demo, cluster, tmp_path)
        prepared = await cluster.prepare_apply(render(preinstalled_plan(), await cluster.discover()))
        result = await cluster.apply(prepared, backup_dir=tmp_path / "b", allow_unverified_preinstalled=True)
        assert result.ok
        demo.settle()
        assert PER_KERNEL not in _daemonsets(demo)
        lines = await cluster.rollback(result.backup_path)
        key = f"DaemonSet/{NAMESPACE}/{PER_KERNEL}"
        assert lines[0] == "restored ClusterPolicy/cluster-policy"
        # the demo's operator makes it at once (there already); the real one within seconds (back)
        assert lines[1:] in (
            [f"{key} is there already"],
            [f"{key} is back: the operator made it again for the restored ClusterPolicy"],
        ), lines
        managers = {f["manager"] for f in _daemonsets(demo)[PER_KERNEL]["metadata"].get("managedFields") or []}
        assert FIELD_MANAGER not in managers, managers


async def test_a_leftover_is_never_ready_and_verify_names_it(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    """The policy disabled by another tool: the operator leaves the per-kernel DaemonSet running its pods."""
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        await _precompiled_then_host_drivers(demo, cluster, tmp_path)
        await _disable_driver_by_hand(demo, cluster)
        assert PER_KERNEL in _daemonsets(demo) and len(_driver_pods(demo)) == 3  # the real operator's behaviour

        plan = preinstalled_plan()
        states = [s async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
        assert states[-1].phase == "failed"
        assert states[-1].message == (
            f"DaemonSet {PER_KERNEL} still runs 3 driver pods, {LEFT}: run gpu-wizard apply again, which deletes it"
        )
        checks, _ = await collect(cluster.verify(plan, no_registry="test", concurrency=2))
        pod = next(iter(by_node(checks, "driver-pod").values()))
        assert pod.hint.startswith(f"a leftover DaemonSet {PER_KERNEL} still runs driver pods, {LEFT}")
        assert f"kubectl delete daemonset -n {NAMESPACE} {PER_KERNEL}" in pod.hint

        # gpu-wizard apply of the same plan: the policy already holds it, the leftover is what it deletes
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert prepared.ok and prepared.diff == "" and prepared.changed and not prepared.holds_driver
        result = await cluster.apply(prepared, backup_dir=tmp_path / "b", allow_unverified_preinstalled=True)
        assert result.deleted == [f"DaemonSet/{NAMESPACE}/{PER_KERNEL}"]
        states = [s async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message


def test_cli_lists_the_deletion_and_deletes_it(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    demo = demo_cluster("ubuntu-upstream")

    async def first() -> None:
        async with connected(demo) as cluster:
            await _precompiled_then_host_drivers(demo, cluster, tmp_path)

    asyncio.run(first())
    answers = tmp_path / "answers.yaml"
    save_answers(answers, preinstalled_plan())
    argv = ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes"]
    flags = ["--no-registry", "--allow-unverified-preinstalled", "--backup-dir", str(tmp_path / "b")]
    assert main([*argv, *flags, "--wait-timeout", "30"]) == 0
    out, err = capsys.readouterr()
    assert f"- delete DaemonSet {NAMESPACE}/{PER_KERNEL}, {LEFT}\n" in out
    assert f"deleted DaemonSet {NAMESPACE}/{PER_KERNEL}, {LEFT}" in err
    assert "rollout: ready" in err or "ready" in err
    assert PER_KERNEL not in _daemonsets(demo)
    # repeated: nothing to change
    assert main([*argv, *flags, "--no-wait"]) == 0
    out, err = capsys.readouterr()
    assert "no changes" in out and "delete DaemonSet" not in out


def upstream(crd: bool) -> Plan:
    driver = {"version": "580.126.20", "repository": "nvcr.io/nvidia", "image": "driver", "useNvidiaDriverCRD": crd}
    return Plan.model_validate({"mode": "upstream", "driver": driver})


async def test_nvidiadriver_crds_off_deletes_what_the_nvidiadriver_controller_left(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The NVIDIADriver controller stops reconciling when useNvidiaDriverCRD goes off and deletes nothing (as the
    real one): its DaemonSet would run driver pods beside the ClusterPolicy's on the same nodes."""
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        on = upstream(True)
        await cluster.apply(await cluster.prepare_apply(render(on, await cluster.discover())), backup_dir=tmp_path)
        states = [s async for s in cluster.rollout(on, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message
        (nvd,) = [name for name in _daemonsets(demo) if name.startswith("nvidia-gpu-driver-ubuntu22.04-")]

        off = upstream(False)
        prepared = await cluster.prepare_apply(render(off, await cluster.discover()))
        reason = "left by the NVIDIADriver controller when useNvidiaDriverCRD is turned off"
        assert [(u.name, u.reason.startswith(reason)) for u in prepared.leftovers] == [(nvd, True)]
        result = await cluster.apply(prepared, backup_dir=tmp_path)
        assert result.deleted == [f"DaemonSet/{NAMESPACE}/{nvd}"]
        states = [s async for s in cluster.rollout(off, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message
        demo.settle()
        drivers = sorted(n for n, d in _daemonsets(demo).items() if "nvidia-driver" in str(d["metadata"]["labels"]))
        assert drivers == ["nvidia-driver-daemonset"]
        assert len(_driver_pods(demo)) == 3  # one driver pod per GPU node, not two


async def test_nvidiadriver_crds_off_by_hand_is_never_ready(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        on = upstream(True)
        await cluster.apply(await cluster.prepare_apply(render(on, await cluster.discover())), backup_dir=tmp_path)
        states = [s async for s in cluster.rollout(on, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message
        policy = await cluster.gateway.get_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        assert policy is not None
        policy["spec"]["driver"]["useNvidiaDriverCRD"] = False
        await cluster.gateway.replace_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy", policy)
        demo.settle()
        assert any(name.startswith("nvidia-gpu-driver-") for name in _daemonsets(demo))  # as the real operator
        states = [s async for s in cluster.rollout(upstream(False), interval=0.05, timeout=30)]
        assert states[-1].phase == "failed"
        assert "left by the NVIDIADriver controller when useNvidiaDriverCRD is turned off" in states[-1].message


async def test_v25_10_nvidiadrivers_keep_their_daemonsets_until_the_objects_go(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """v25.10.1's NVIDIADriver controller ignores useNvidiaDriverCRD: false: the apply deletes nothing it would
    re-create, and the rollout fails naming the NVIDIADriver objects instead of waiting (or saying ready)."""
    old = scenario("ubuntu-upstream")
    old.operator = dataclasses.replace(old.operator, release="v25.10.1")
    demo = demo_cluster(old)
    async with connected(demo) as cluster:
        on = upstream(True).model_copy(
            update={"operator": upstream(True).operator.model_copy(update={"version": "v25.10.1"})}
        )
        await cluster.apply(await cluster.prepare_apply(render(on, await cluster.discover())), backup_dir=tmp_path)
        states = [s async for s in cluster.rollout(on, interval=0.05, timeout=30)]
        assert states[-1].phase == "ready", states[-1].message
        off = on.model_copy(update={"driver": on.driver.model_copy(update={"useNvidiaDriverCRD": False})})
        prepared = await cluster.prepare_apply(render(off, await cluster.discover()))
        assert prepared.ok and prepared.leftovers == [], prepared.deletions
        await cluster.apply(prepared, backup_dir=tmp_path)
        demo.settle()
        assert any(name.startswith("nvidia-gpu-driver-") for name in _daemonsets(demo))  # still reconciled
        states = [s async for s in cluster.rollout(off, interval=0.05, timeout=30)]
        assert states[-1].phase == "failed"
        assert "kubectl delete nvidiadrivers --all" in states[-1].message
