"""Applies that can be repeated: after a gpu-wizard, a Helm and a hand-made install, with the CLI on the demo cluster.

Each origin gets the same answers again (no write, no backup, one message), a new driver version
and ``--force-conflicts``; after every apply the live ClusterPolicy must still be what the operator
needs: valid against the release's CRD, every required field (``spec.daemonsets``, ``spec.dcgm``…) kept.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main
from wizard.cluster.applying.apply_preview import CREATE_MANAGER, FIELD_MANAGER
from wizard.cluster.applying.backup import clean
from wizard.cluster.core.preflight import POLICY
from wizard.engine.answers import save_answers
from wizard.engine.crd_schema import validate_against_crd
from wizard.engine.plan import Plan
from wizard.engine.render import render

SLE = {"mode": "precompiled", "driver": {"version": "580.126.09.1", "repository": "registry.example.com/mlops"}}
REQUIRED = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "gfd", "nodeStatusExporter", "operator", "driver")


def _plan(base: Plan, version: str) -> Plan:
    return base.model_copy(update={"driver": base.driver.model_copy(update={"version": version})})


async def _live_plan(demo: DemoClusterThread) -> Plan:
    async with connected(demo) as cluster:
        return await cluster.live_plan()


def _apply(
    demo: DemoClusterThread, tmp_path: Path, capsys: pytest.CaptureFixture[str], plan: Plan, *flags: str
) -> tuple[int, str, str]:
    answers = tmp_path / "answers.yaml"
    save_answers(answers, plan)
    argv = ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes", "--no-wait"]
    # --override-helm: these tests are about field ownership under server-side apply; what Helm's own
    # path does instead is tests/test_apply_helm.py
    code = main([*argv, "--no-registry", "--override-helm", "--backup-dir", str(tmp_path / "backups"), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def _live(demo: DemoClusterThread) -> dict[str, Any]:
    live = demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None
    return live


def _assert_whole(demo: DemoClusterThread, bundle: str, version: str) -> None:
    """The live ClusterPolicy is one the operator can use, with the plan's driver version."""
    live = _live(demo)
    assert validate_against_crd(clean(live), bundle) == []
    assert all(key in live["spec"] for key in REQUIRED), sorted(live["spec"])
    assert live["spec"]["driver"]["version"] == version
    if (live["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") != "Helm":
        # Rendered by gpu-wizard: what the chart's template adds must survive every later apply
        # (without podDeletion the operator's upgrade library stalls every driver upgrade).
        assert live["spec"]["driver"]["upgradePolicy"]["podDeletion"] == {
            "force": False,
            "timeoutSeconds": 300,
            "deleteEmptyDir": False,
        }
        assert live["spec"]["daemonsets"]["labels"] == {"app.kubernetes.io/managed-by": "gpu-operator"}


def _backups(tmp_path: Path) -> int:
    folder = tmp_path / "backups"
    return len(list(folder.iterdir())) if folder.exists() else 0


async def _create_by_hand(demo: DemoClusterThread, plan: Plan) -> None:
    """``kubectl create -f`` of the whole policy: another manager (an update) owns every field."""
    async with connected(demo) as cluster:
        body = render(plan, await cluster.discover()).cluster_policy
        gateway = cluster.gateway
        create = gateway.raw(gateway.custom, "create_cluster_custom_object")
        await gateway.call("creating by hand", create, *POLICY, body, field_manager="kubectl-create", safe=False)


async def _create_as_before(demo: DemoClusterThread, plan: Plan) -> None:
    """What gpu-wizard did before ``gpu-wizard-create``: the whole policy applied as ``gpu-wizard``."""
    async with connected(demo) as cluster:
        body = render(plan, await cluster.discover()).cluster_policy
        await cluster.gateway.apply_custom(*POLICY, "cluster-policy", body, dry_run=False)


@pytest.mark.parametrize("origin", ["gpu-wizard", "helm", "hand-made", "earlier-gpu-wizard"])
def test_apply_again_after_an_install(
    origin: str, demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install" if origin == "helm" else "sle-micro-precompiled")
    first = asyncio.run(_live_plan(demo)) if origin == "helm" else Plan.model_validate(SLE)
    bundle = first.operator.bundle
    if origin == "gpu-wizard":
        code, out, err = _apply(demo, tmp_path, capsys, first)
        assert code == 0, err
        managers = {(m["manager"], m["operation"]) for m in _live(demo)["metadata"]["managedFields"]}
        assert managers == {(CREATE_MANAGER, "Apply")}
    elif origin == "hand-made":
        asyncio.run(_create_by_hand(demo, first))
    elif origin == "earlier-gpu-wizard":
        asyncio.run(_create_as_before(demo, first))
    else:  # the plan read back from Helm's policy is what it holds: the first apply only repairs podDeletion
        code, out, err = _apply(demo, tmp_path, capsys, first)
        assert code == 0 and "+      podDeletion:" in out, err
        assert "repoConfig" not in out  # no empty repoConfig for a policy that never named a ConfigMap
    _assert_whole(demo, bundle, first.driver.version)
    backups = _backups(tmp_path)

    # The same answers again: nothing to write, no backup, one message on both streams, exit 0.
    before = _live(demo)
    code, out, err = _apply(demo, tmp_path, capsys, first)
    assert (code, out) == (0, "no changes: the cluster already holds this plan\n"), err
    assert "no changes" in err and "applied" not in err.replace("nothing applied", "")
    after = _live(demo)  # the operator's status updates go on; the spec and its owners do not move
    assert _backups(tmp_path) == backups and clean(after) == clean(before)
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    _assert_whole(demo, bundle, first.driver.version)

    # A new driver version: the wizard's own fields move; another manager's are refused without --force-conflicts.
    upgrade = _plan(first, "580.126.20" if origin == "helm" else "580.105.08.1")
    code, out, err = _apply(demo, tmp_path, capsys, upgrade)
    if origin == "hand-made":
        assert code == 2 and "conflict with field manager 'kubectl-create' over .spec.driver.version" in err
        assert "--force-conflicts" in err and "nothing applied" in err
        assert _backups(tmp_path) == backups
        _assert_whole(demo, bundle, first.driver.version)
        code, out, err = _apply(demo, tmp_path, capsys, upgrade, "--force-conflicts")
    assert code == 0 and "+    version: " in out, err
    assert _backups(tmp_path) == backups + 1
    _assert_whole(demo, bundle, upgrade.driver.version)

    # And back with --force-conflicts: still whole, still repeatable.
    code, out, err = _apply(demo, tmp_path, capsys, first, "--force-conflicts")
    assert code == 0, err
    _assert_whole(demo, bundle, first.driver.version)
    code, out, err = _apply(demo, tmp_path, capsys, first)
    assert (code, out) == (0, "no changes: the cluster already holds this plan\n"), err
    _assert_whole(demo, bundle, first.driver.version)


async def _create_without_pod_deletion(demo: DemoClusterThread, plan: Plan, manager: str) -> None:
    """A policy as gpu-wizard created it before chart parity: no ``driver.upgradePolicy.podDeletion``."""
    async with connected(demo) as cluster:
        body = render(plan, await cluster.discover()).cluster_policy
        del body["spec"]["driver"]["upgradePolicy"]["podDeletion"]
        await cluster.gateway.apply_custom(*POLICY, "cluster-policy", body, dry_run=False, field_manager=manager)


@pytest.mark.parametrize("manager", [CREATE_MANAGER, FIELD_MANAGER])
def test_apply_gives_an_earlier_policy_pod_deletion_and_keeps_it(
    manager: str, demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without podDeletion the operator stalls every driver upgrade: the next apply adds it, later ones keep it."""
    demo = demo_cluster("sle-micro-precompiled")
    first = Plan.model_validate(SLE)
    asyncio.run(_create_without_pod_deletion(demo, first, manager))
    assert "podDeletion" not in _live(demo)["spec"]["driver"]["upgradePolicy"]

    code, out, err = _apply(demo, tmp_path, capsys, first)
    assert code == 0 and "+      podDeletion:\n" in out, (out, err)
    _assert_whole(demo, first.operator.bundle, first.driver.version)

    code, out, err = _apply(demo, tmp_path, capsys, first)
    assert (code, out) == (0, "no changes: the cluster already holds this plan\n"), err
    upgrade = _plan(first, "580.105.08.1")
    code, out, err = _apply(demo, tmp_path, capsys, upgrade)
    assert code == 0 and "-      podDeletion:" not in out, err  # unchanged (at most a context line)
    _assert_whole(demo, first.operator.bundle, upgrade.driver.version)
