"""A rollout over a node already ``upgrade-failed`` before it began waits for the retry; it is not its failure.

Issue 35's walk of ``upgrade-in-progress``: the wizard's own fix (tick the NVIDIADriver CRD, so the Ubuntu 24.04
node gets its own image) was applied, and the Apply step said "failed: driver upgrade failed on gpu-h100-01" at
once — the node's state from the earlier, failed upgrade — while the fix went on to a verified install. The
follower's first snapshot now takes such nodes as an earlier rollout's; one that leaves the state and fails again
is this rollout's failure.
"""

from __future__ import annotations

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory, PausableSimulation
from wizard.cluster.core.preflight import POLICY as POLICIES
from wizard.cluster.core.rollout_cache import slim_node, slim_pod, without_managed_fields
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.rollouts.rollout import Followed, UpgradeClock, snapshot
from wizard.cluster.rollouts.rollout_verdict import RETRYING, classify
from wizard.engine.plan import Plan

FAILED = "gpu-h100-01"
POLICY = {
    "metadata": {"name": "cluster-policy"},
    "status": {"state": "notReady", "conditions": [{"type": "Ready", "status": "False", "reason": "x"}]},
}
PREINSTALLED = Plan.model_validate({"mode": "preinstalled"})


async def test_a_node_failed_before_the_rollout_is_waited_on(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("upgrade-in-progress", simulation=PausableSimulation)
    demo.sim.paused = True  # the nodes stay in their seeded states: the first snapshot sees gpu-h100-01 failed
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        plan = Plan.model_validate(
            {**plan.answers_dict(), "driver": {**plan.answers_dict()["driver"], "useNvidiaDriverCRD": True}}
        )
        namespace = await cluster.namespace(plan)
        gateway = cluster.gateway
        followed = Followed(
            policies=WatchCache(gateway, POLICIES, slim=without_managed_fields),
            drivers=None,
            daemonsets=WatchCache(gateway, "daemonsets", namespace=namespace, slim=without_managed_fields),
            nodes=WatchCache(gateway, "nodes", slim=slim_node),
            pods=WatchCache(gateway, "pods", namespace=namespace, slim=slim_pod),
        )
        for cache in followed.all():
            await cache.relist(report=False)
        first = snapshot(followed, plan, 0.0, UpgradeClock())
    assert first.upgrade_states[FAILED] == "upgrade-failed"
    assert first.phase != "failed", first.message
    assert "driver upgrade failed" not in first.message


def test_a_node_that_fails_again_is_this_rollouts_failure() -> None:
    clock = UpgradeClock()
    clock.observe({FAILED: "upgrade-failed", "gpu-2": "upgrade-done"}, [], 0.0)  # the first snapshot
    before = frozenset(clock.failed_before or ())
    phase, message = classify(
        PREINSTALLED, POLICY, "notReady", [], [], {FAILED: "upgrade-failed"}, {}, [], failed_before=before
    )
    assert (phase, message) == ("progressing", f"{RETRYING} {FAILED} (upgrade-failed before this rollout began)")
    clock.observe({FAILED: "upgrade-required"}, [], 1.0)  # retried by the upgrade controller
    clock.observe({FAILED: "upgrade-failed"}, [], 2.0)  # and failed again: this rollout's failure
    before = frozenset(clock.failed_before or ())
    phase, message = classify(
        PREINSTALLED, POLICY, "notReady", [], [], {FAILED: "upgrade-failed"}, {}, [], failed_before=before
    )
    assert (phase, message) == ("failed", f"driver upgrade failed on {FAILED}")
