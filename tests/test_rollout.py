"""Following a rollout by watches: a bounded number of lists, each node's upgrade state with its time,
and crash-loop verdicts on a time window rather than on two samples."""

from __future__ import annotations

from pathlib import Path

from tests.cluster_util import connected
from tests.fixtures_demo import ClusterFactory
from wizard.cluster.rollout import PodStatus, UpgradeClock


def test_crash_loop_verdict_needs_the_whole_window() -> None:
    clock = UpgradeClock()
    looping = [PodStatus("driver-x", "gpu-1", "Running", "CrashLoopBackOff", container="nvidia-driver-ctr")]
    clock.observe({"gpu-1": "pod-restart-required"}, looping, now=100.0)
    assert clock.crash_looping_for(60, now=130.0) is None  # a restart during a normal upgrade
    clock.observe({"gpu-1": "pod-restart-required"}, [], now=131.0)  # it recovered: the window starts over
    clock.observe({"gpu-1": "validation-required"}, looping, now=140.0)
    assert clock.crash_looping_for(60, now=199.0) is None
    assert clock.crash_looping_for(60, now=200.0) == ("driver-x", "nvidia-driver-ctr")
    assert clock.states["gpu-1"] == ("validation-required", 140.0)  # entered its state at 140


async def test_an_upgrade_is_followed_by_watches_not_polls(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("existing-install-plain")
    async with connected(demo) as cluster:
        from wizard.engine.render import render

        plan = await cluster.live_plan()
        plan = plan.model_copy(update={"driver": plan.driver.model_copy(update={"version": "580.126.20"})})
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert (await cluster.apply(prepared, backup_dir=tmp_path)).ok
        before = cluster.gateway.stats.requests
        seen_states: set[str] = set()
        timed = False
        statuses = []
        async for status in cluster.rollout(plan, interval=0.05, timeout=30):
            statuses.append(status)
            seen_states |= set(status.upgrade_states.values())
            timed = timed or any(seconds >= 0 for seconds in status.time_in_state.values())
        requests = cluster.gateway.stats.requests - before
    assert statuses[-1].phase == "ready", statuses[-1].message
    assert "upgrade-done" in seen_states and timed
    # 5 kinds listed once (+ preflight's reads for the namespace) however long the rollout ran (the demo
    # may finish before the first list, or walk every node through its states first); a poll every
    # 50 ms would have made hundreds of requests.
    assert requests <= 15, requests
    print(f"rollout followed with {requests} requests, {len(statuses)} snapshots")
