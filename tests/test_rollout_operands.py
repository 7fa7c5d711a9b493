"""The rollout's ``ready`` waits for every operand DaemonSet, not only the operator's word.

Seen on the real operator (the real-cluster lane, docs/real-cluster.md): right after it creates an
operand DaemonSet that the DaemonSet controller has not looked at yet (no pod wanted), the operator
counts it ready and may report the ClusterPolicy ``ready``; a verification seconds later said
``notReady``. The rule is pure, so it is checked here on the objects as the server holds them; the follower confirms
its ``ready`` on fresh lists, checked on the demo cluster with caches left behind as a lagging watch leaves them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory, PausableSimulation
from wizard.cluster.core.preflight import POLICY as POLICIES
from wizard.cluster.core.rollout_cache import slim_node, slim_pod, without_managed_fields
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.rollouts.rollout import Followed, UpgradeClock, confirm_ready, snapshot
from wizard.cluster.rollouts.rollout_verdict import DaemonSetStatus, classify
from wizard.engine.plan import Plan

POLICY = {
    "metadata": {"name": "cluster-policy"},
    "status": {
        "state": "ready",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Reconciled", "message": ""}],
    },
}
PREINSTALLED = Plan.model_validate({"mode": "preinstalled"})


def _operand(name: str, desired: int, ready: int, observed: bool) -> DaemonSetStatus:
    return DaemonSetStatus(name, desired, ready, ready, "", observed)


def _phase(plan: Plan, operands: list[DaemonSetStatus], drivers: list[DaemonSetStatus] | None = None) -> Any:
    return classify(plan, POLICY, "ready", drivers or [], [], {}, {}, operands)


@pytest.mark.parametrize(
    ("operand", "expected"),
    [
        (_operand("nvidia-device-plugin-daemonset", 0, 0, observed=False), "progressing"),  # just created
        (_operand("nvidia-device-plugin-daemonset", 2, 0, observed=True), "progressing"),  # pods on their way
        (_operand("nvidia-device-plugin-daemonset", 2, 2, observed=True), "ready"),
        (_operand("nvidia-mig-manager", 0, 0, observed=True), "ready"),  # no node wants it: truly done
    ],
)
def test_ready_waits_for_every_operand_daemonset(operand: DaemonSetStatus, expected: str) -> None:
    phase, message = _phase(PREINSTALLED, [operand])
    assert phase == expected, message
    if expected == "progressing":
        assert "ClusterPolicy ready, but nvidia-device-plugin-daemonset is still rolling out" in message


def test_driver_daemonsets_still_come_first() -> None:
    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}}
    )
    driver = DaemonSetStatus("nvidia-driver-daemonset", 2, 1, 1, "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04")
    phase, message = _phase(plan, [_operand("nvidia-dcgm-exporter", 0, 0, observed=False)], [driver])
    assert (phase, message) == ("progressing", "driver pods ready: nvidia-driver-daemonset 1/2")


UPSTREAM = Plan.model_validate(
    {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}}
)
IMAGE = "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"


@pytest.mark.parametrize(
    ("driver", "hosted", "expected"),
    [
        # every GPU node runs a host driver: the driver manager unscheduled them all, nothing will ever start
        (DaemonSetStatus("nvidia-driver-daemonset", 0, 0, 0, IMAGE, True), ["gpu-0", "gpu-1"], "failed"),
        # the DaemonSet controller has not looked yet: 0 wanted proves nothing
        (DaemonSetStatus("nvidia-driver-daemonset", 0, 0, 0, IMAGE, False), ["gpu-0"], "progressing"),
        # some nodes still want a driver pod: the rollout goes on for them
        (DaemonSetStatus("nvidia-driver-daemonset", 1, 0, 0, IMAGE, True), ["gpu-0"], "progressing"),
        # no node labelled pre-installed: 0 wanted is waited on as before
        (DaemonSetStatus("nvidia-driver-daemonset", 0, 0, 0, IMAGE, True), [], "progressing"),
    ],
)
def test_driver_pods_never_wanted_on_pre_installed_hosts_fail_at_once(
    driver: DaemonSetStatus, hosted: list[str], expected: str
) -> None:
    phase, message = classify(UPSTREAM, POLICY, "ready", [driver], [], {}, {}, [], hosted)
    assert phase == expected, message
    if expected == "failed":
        assert "host driver on gpu-0, gpu-1 (nvidia.com/gpu.deploy.driver=pre-installed)" in message
        assert "set mode: preinstalled" in message


async def test_ready_is_confirmed_on_fresh_lists(demo_cluster: ClusterFactory) -> None:
    """Watches of different kinds are not ordered with each other: the policy's ``ready`` can arrive before the
    DaemonSet the operator created just before writing it (the real operator's first pass counts a DaemonSet
    its cache does not hold yet as ready). The follower's ``ready`` holds only on fresh lists."""
    demo = demo_cluster("existing-install-plain", simulation=PausableSimulation)
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
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
        clock = UpgradeClock()
        settled = snapshot(followed, plan, 0.0, clock)
        assert settled.phase == "ready", settled.message
        assert (await confirm_ready(followed, plan, 0.0, clock)).phase == "ready"

        policy = followed.policies.items()[0]["metadata"]
        demo.sim.paused = True  # the new DaemonSet stays as the operator created it: no controller has looked yet
        late = "nvidia-late-operand"
        await gateway.create_daemonset(namespace, _operand_daemonset(late, namespace, policy))
        stale = snapshot(followed, plan, 0.0, clock)  # no watch ran: the caches are behind, as a lagging one
        assert stale.phase == "ready" and late not in stale.message
        confirmed = await confirm_ready(followed, plan, 0.0, clock)
    assert confirmed.phase == "progressing", confirmed.message
    assert f"ClusterPolicy ready, but {late} is still rolling out" in confirmed.message


def _operand_daemonset(name: str, namespace: str, policy: dict[str, Any]) -> dict[str, Any]:
    """An operand DaemonSet of the ClusterPolicy."""
    labels = {"app": name}
    owner = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": policy["name"], "uid": policy["uid"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "late", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.0"}]},
            },
        },
    }
