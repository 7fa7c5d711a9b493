"""The guarded write of an apply: the operator's status reports never make it fail, anything else still does.

Taking back the wizard's own fields (after its create, an earlier version) is a forced apply guarded by
the resourceVersion of the object the preview showed. The real operator reports in the ClusterPolicy's
status every few seconds while it works (an upgrade most of all), so that version moves between the
preview and the write; the real-cluster lane saw the write refused with 409 (docs/real-cluster.md).
Here, on the demo cluster over HTTPS, a status report lands between preview and write on purpose.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import connected, sle_plan
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.applying.apply_preview import guarded_apply, same_but_status
from wizard.cluster.applying.backup import ObjectRef
from wizard.cluster.core.preflight import POLICY
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.facade import Cluster
from wizard.engine.plan import Plan
from wizard.engine.render import render


def _new_version(plan: Plan) -> Plan:
    return plan.model_copy(update={"driver": plan.driver.model_copy(update={"version": "580.105.08.1"})})


async def _report_status(cluster: Cluster, state: str) -> None:
    """What the operator does all the time: a merge patch of the ClusterPolicy's status subresource."""
    gateway = cluster.gateway
    patch = gateway.raw(gateway.custom, "patch_cluster_custom_object_status")
    await gateway.call("reporting status", patch, *POLICY, "cluster-policy", {"status": {"state": state}}, safe=False)


async def _relabel(cluster: Cluster) -> None:
    """Another tool changes the policy itself (a label, by a merge patch under its own manager)."""
    gateway = cluster.gateway
    patch = gateway.raw(gateway.custom, "patch_cluster_custom_object")
    body = {"metadata": {"labels": {"team": "ml"}}}
    await gateway.call("relabelling", patch, *POLICY, "cluster-policy", body, field_manager="kubectl-label", safe=False)


async def _install_then_change(cluster: Cluster, tmp_path: Path, between: str) -> tuple[Any, dict[str, Any]]:
    first = sle_plan()
    rendered = render(first, await cluster.discover())
    result = await cluster.apply(await cluster.prepare_apply(rendered), backup_dir=tmp_path)
    assert result.ok, result.message
    prepared = await cluster.prepare_apply(render(_new_version(first), await cluster.discover()))
    assert prepared.ok and prepared.takeover == {"ClusterPolicy/cluster-policy"}, prepared.errors
    if between == "status":
        await _report_status(cluster, "notReady")
    elif between == "label":
        await _relabel(cluster)
    return prepared, await cluster.gateway.get_custom(*POLICY, "cluster-policy")


@pytest.mark.parametrize("between", ["nothing", "status"])
def test_the_operators_status_reports_between_preview_and_write_do_not_refuse_it(
    between: str, demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")

    async def go() -> None:
        async with connected(demo) as cluster:
            prepared, live = await _install_then_change(cluster, tmp_path, between)
            assert same_but_status(prepared.live["ClusterPolicy/cluster-policy"], live)
            result = await cluster.apply(prepared, backup_dir=tmp_path)
            assert result.ok, result.message
            now = await cluster.gateway.get_custom(*POLICY, "cluster-policy")
            assert now["spec"]["driver"]["version"] == "580.105.08.1"

    asyncio.run(go())


def test_a_change_by_another_tool_between_preview_and_write_still_refuses_it(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")

    async def go() -> None:
        async with connected(demo) as cluster:
            prepared, live = await _install_then_change(cluster, tmp_path, "label")
            assert not same_but_status(prepared.live["ClusterPolicy/cluster-policy"], live)
            with pytest.raises(ClusterError, match="changed on the server since the preview"):
                await cluster.apply(prepared, backup_dir=tmp_path)
            now = await cluster.gateway.get_custom(*POLICY, "cluster-policy")
            assert now["spec"]["driver"]["version"] == "580.126.09.1"

    asyncio.run(go())


@pytest.mark.parametrize("between", ["status", "label"])
def test_the_guarded_write_follows_a_status_report_and_nothing_else(
    between: str, demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """Between the apply's own check and its write (the window the lane hit): the write itself re-reads."""
    demo = demo_cluster("sle-micro-precompiled")

    async def go() -> None:
        async with connected(demo) as cluster:
            prepared, _ = await _install_then_change(cluster, tmp_path, between)
            ref = ObjectRef.of(prepared.objects[0])
            seen = prepared.live[ref.key]
            if between == "status":
                await guarded_apply(cluster.gateway, ref, prepared.objects[0], seen, dry_run=False)
                now = await cluster.gateway.get_custom(*POLICY, "cluster-policy")
                assert now["spec"]["driver"]["version"] == "580.105.08.1"
            else:
                with pytest.raises(ApiError) as refused:
                    await guarded_apply(cluster.gateway, ref, prepared.objects[0], seen, dry_run=False)
                assert refused.value.status == 409 and "has been modified" in refused.value.message

    asyncio.run(go())
