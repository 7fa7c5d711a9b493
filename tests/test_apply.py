"""Dry-run, diff, backup, server-side apply, conflicts, dropped connections and rollback on the demo cluster."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import connected, preinstalled_plan, scenario, sle_plan
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.applying.apply_preview import ApplyPlan
from wizard.cluster.applying.backup import clean, private, read_backup
from wizard.cluster.core.preflight import DRIVERS, POLICY
from wizard.cluster.facade import Cluster, ClusterError
from wizard.cluster.probes.probe import PROBE_LABEL
from wizard.engine.render import render


async def _policy(cluster: Cluster) -> dict | None:  # type: ignore[type-arg]
    return await cluster.gateway.get_custom(*POLICY, "cluster-policy")


async def test_fresh_install_dry_run_diff_backup_apply(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        rendered = render(sle_plan(), await cluster.discover())
        prepared = await cluster.prepare_apply(rendered)
        assert prepared.ok and prepared.changed and not prepared.preinstalled
        assert "--- live/ClusterPolicy/cluster-policy" in prepared.diff
        assert "+    version: 580.126.09.1" in prepared.diff
        assert await _policy(cluster) is None  # the dry-run persisted nothing

        result = await cluster.apply(prepared, backup_dir=tmp_path / "backups")
        assert result.state == "applied" and result.created == ["ClusterPolicy/cluster-policy"]
        assert result.backup_path.parent == tmp_path / "backups" and private(result.backup_path)
        backup = read_backup(result.backup_path)
        assert backup.objects == [] and [r.key for r in backup.created] == ["ClusterPolicy/cluster-policy"]

        live = await _policy(cluster)
        assert live is not None and live["spec"]["driver"]["version"] == "580.126.09.1"
        managers = {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]}
        assert managers == {("gpu-wizard-create", "Apply")}  # created whole by a manager that never applies again

        assert await cluster.rollback(result.backup_path) == [
            "deleted ClusterPolicy/cluster-policy (created by the apply)"
        ]
        assert await _policy(cluster) is None


async def test_nothing_is_applied_when_validation_fails(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        rendered = render(sle_plan(), await cluster.discover())
        rendered.cluster_policy["spec"]["driver"]["usePrecompield"] = True  # a typo the CRD does not know
        prepared = await cluster.prepare_apply(rendered)
        assert not prepared.ok
        assert any("usePrecompield" in e and e.startswith("ClusterPolicy:") for e in prepared.errors)  # local schema
        assert any("usePrecompield" in e and "dry-run applying" in e for e in prepared.errors)  # server, strict
        with pytest.raises(ClusterError, match="nothing applied: validation failed"):
            await cluster.apply(prepared, backup_dir=tmp_path)
        assert await _policy(cluster) is None
    assert list(tmp_path.iterdir()) == []  # no backup either: nothing was about to change


async def test_conflict_names_the_other_field_manager(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    plan = sle_plan(useNvidiaDriverCRD=True)
    async with connected(demo) as cluster:
        rendered = render(plan, await cluster.discover())
        first = await cluster.apply(await cluster.prepare_apply(rendered), backup_dir=tmp_path)
        assert first.created == ["ClusterPolicy/cluster-policy", "NVIDIADriver/default"]
        # Another tool takes over the driver version of the NVIDIADriver with server-side apply.
        theirs = copy.deepcopy(rendered.nvidia_drivers[0])
        theirs["spec"]["version"] = "570.172.08.1"
        gateway = cluster.gateway
        patch = gateway.raw(gateway.custom, "patch_cluster_custom_object")
        await gateway.call(
            "helm",
            patch,
            *DRIVERS,
            "default",
            theirs,
            field_manager="helm",
            force=True,
            _content_type="application/apply-patch+yaml",
        )

        prepared = await cluster.prepare_apply(rendered)
        conflicts = [e for e in prepared.errors if e.startswith("NVIDIADriver/default")]
        assert conflicts and "conflict with field manager 'helm' over .spec.version" in conflicts[0]
        assert "--force-conflicts" in conflicts[0]
        with pytest.raises(ClusterError, match="conflict with field manager 'helm'"):
            await cluster.apply(prepared, backup_dir=tmp_path)
        live = await gateway.get_custom(*DRIVERS, "default")
        assert live is not None and live["spec"]["version"] == "570.172.08.1"


@pytest.mark.parametrize(
    ("drops", "after"),
    [(1, True), (1, False), (2, False)],
    ids=["acted-then-dropped", "dropped-once", "dropped-always"],
)
async def test_dropped_connection_during_apply(
    demo_cluster: ClusterFactory, tmp_path: Path, drops: int, after: bool
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        prepared = await cluster.prepare_apply(render(sle_plan(), await cluster.discover()))
        faults = demo.faults  # only the real apply (a PATCH) loses its connection; reads and the rollback do not
        faults.methods, faults.only, faults.drop_rate, faults.drop_after, faults.budget = (
            ["PATCH"],
            ["/apis/nvidia.com"],
            1.0,
            after,
            drops,
        )
        result = await cluster.apply(prepared, backup_dir=tmp_path)
        live = await _policy(cluster)
    assert faults.injected["drop"] == drops
    if drops == 1:  # re-read: applied (by the request the server acted on, or by the one retry)
        assert result.state == "applied" and live is not None
    else:  # both attempts cut: rolled back from the backup and re-read as before
        assert result.state == "unchanged" and "the cluster is unchanged" in result.message
        assert live is None


async def test_rollback_restores_the_backup_exactly(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("existing-install")
    async with connected(demo) as cluster:
        original = await _policy(cluster)
        assert original is not None
        changed = clean(original)
        changed["spec"]["driver"]["version"] = "580.126.20"
        changed["metadata"].setdefault("labels", {})["team"] = "ml"
        prepared = ApplyPlan(
            objects=[changed], live={"ClusterPolicy/cluster-policy": original}, diff="(test)", errors=[]
        )
        result = await cluster.apply(prepared, backup_dir=tmp_path)
        assert result.state == "applied" and result.created == []
        after = await _policy(cluster)
        assert after is not None and after["spec"]["driver"]["version"] == "580.126.20"

        backup = read_backup(result.backup_path)
        assert [clean(o) for o in backup.objects] == [clean(original)]
        assert "resourceVersion" not in backup.objects[0]["metadata"]
        assert await cluster.rollback(result.backup_path) == ["restored ClusterPolicy/cluster-policy"]
        restored = await _policy(cluster)
        assert restored is not None and clean(restored) == clean(original)


async def test_upgrade_applies_only_the_owned_fields_and_rolls_back(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("existing-install")
    async with connected(demo) as cluster:
        original = await _policy(cluster)
        plan = await cluster.live_plan()
        plan = plan.model_copy(update={"driver": plan.driver.model_copy(update={"version": "580.126.20"})})
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert prepared.ok, prepared.errors
        assert "-    version: 570.195.03\n+    version: 580.126.20" in prepared.diff
        assert "dcgm" not in prepared.diff and "validator" not in prepared.diff  # only the wizard's fields
        result = await cluster.apply(prepared, backup_dir=tmp_path)
        assert result.state == "applied" and result.created == []
        states = [status.phase async for status in cluster.rollout(plan, interval=0.05, timeout=20)]
        assert states[-1] == "ready"
        live = await _policy(cluster)
        assert live is not None and live["spec"]["driver"]["version"] == "580.126.20"
        assert live["spec"]["validator"] == original["spec"]["validator"]  # type: ignore[index]

        assert await cluster.rollback(result.backup_path) == ["restored ClusterPolicy/cluster-policy"]
        restored = await _policy(cluster)
        assert restored is not None and original is not None and clean(restored) == clean(original)


async def test_preinstalled_is_refused_until_nvidia_smi_passes(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    broken = scenario("preinstalled")
    broken.nodes[1].count = 1
    broken.nodes.append(dataclasses.replace(broken.nodes[1], name="gpu-bad", host_driver_broken=True))
    demo = demo_cluster(broken)
    async with connected(demo) as cluster:
        prepared = await cluster.prepare_apply(render(preinstalled_plan(), await cluster.discover()))
        assert prepared.ok and prepared.preinstalled
        with pytest.raises(ClusterError, match="nvidia-smi did not pass on gpu-bad") as err:
            await cluster.apply(prepared, backup_dir=tmp_path)
        assert "--allow-unverified-preinstalled" in err.value.hint
        assert await _policy(cluster) is None
        assert cluster.host_verified == {"gpu-l40s"}
        assert await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL) == []
        result = await cluster.apply(prepared, backup_dir=tmp_path, allow_unverified_preinstalled=True)
        assert result.state == "applied"


@pytest.mark.parametrize("undo_fails", [False, True], ids=["undone", "undo-failed"])
async def test_conflict_on_a_later_object_reports_what_the_undo_did(
    demo_cluster: ClusterFactory, tmp_path: Path, undo_fails: bool
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        prepared = await cluster.prepare_apply(render(sle_plan(useNvidiaDriverCRD=True), await cluster.discover()))
        assert list(prepared.live) == ["ClusterPolicy/cluster-policy", "NVIDIADriver/default"]

        def faulted(request: Any) -> bool:  # the NVIDIADriver's real apply loses a race (409); the undo's delete too
            if request.method == "PATCH":
                return "nvidiadrivers" in request.path and "dryRun" not in request.query
            return undo_fails and request.method == "DELETE"

        demo.faults.when, demo.faults.error_rate, demo.faults.error_code = faulted, 1.0, 409
        with pytest.raises(ClusterError) as err:
            await cluster.apply(prepared, backup_dir=tmp_path)
        (backup,) = tmp_path.iterdir()
        policy = await _policy(cluster)
        if undo_fails:  # never "nothing was changed": the policy the apply created is still there
            assert "the rollback could not confirm the old state" in err.value.message
            assert "nothing was changed" not in err.value.message and str(backup) in err.value.message
            assert err.value.hint == f"run: gpu-wizard rollback --backup {backup}"
            assert policy is not None
            demo.faults.clear()
            assert await cluster.rollback(backup) == [
                "deleted ClusterPolicy/cluster-policy (created by the apply)",
                "NVIDIADriver/default already absent",
            ]
        else:
            assert "nothing was changed (rolled back and read back)" in err.value.message
            assert policy is None
        assert await _policy(cluster) is None


async def test_an_upgrade_diff_shows_no_empty_repoconfig_the_live_policy_never_had(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("existing-install-plain")
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        plan = plan.model_copy(update={"driver": plan.driver.model_copy(update={"version": "580.126.20"})})
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
    assert prepared.ok and "version: 580.126.20" in prepared.diff
    assert "repoConfig" not in prepared.diff  # nothing to clear: no change to show


async def test_a_server_lost_between_the_diff_and_the_write_says_nothing_was_applied(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The re-read before the write fails (a real kube-apiserver restarted after the person confirmed:
    tests/realcluster/test_faults_real.py): the error says that nothing was applied, and nothing was."""
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        prepared = await cluster.prepare_apply(render(sle_plan(), await cluster.discover()))
        demo.faults.error_code, demo.faults.error_rate, demo.faults.methods = 500, 1.0, ["GET"]
        with pytest.raises(ClusterError, match=r"^nothing applied: reading clusterpolicies/cluster-policy: ") as err:
            await cluster.apply(prepared, backup_dir=tmp_path / "backups")
        demo.faults.clear()
        assert await _policy(cluster) is None and not (tmp_path / "backups").exists()
    assert "Traceback" not in str(err.value)
