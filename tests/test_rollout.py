"""Following a rollout by watches: a bounded number of lists, each node's upgrade state with its time,
and crash-loop verdicts on a time window rather than on two samples."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from pathlib import Path
from typing import Any

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.core.rollout_cache import PodStatus, slim_node, slim_pod, waiting_pods, without_managed_fields
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.rollouts.rollout import UpgradeClock
from wizard.engine.facts import LABEL_UPGRADE_STATE


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


def _pod_with_everything() -> dict[str, Any]:
    """A driver pod as the API server sends it: managedFields, owner, spec and three container statuses."""
    return {
        "metadata": {
            "name": "nvidia-driver-daemonset-abcde",
            "namespace": "gpu-operator",
            "labels": {"app.kubernetes.io/component": "nvidia-driver"},
            "ownerReferences": [{"kind": "DaemonSet", "name": "nvidia-driver-daemonset", "uid": "u1"}],
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {"f:phase": {}}}}],
        },
        "spec": {"nodeName": "gpu-7", "containers": [{"name": "nvidia-driver-ctr", "image": "nvcr.io/x:1"}]},
        "status": {
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "k8s-driver-manager", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
            "containerStatuses": [
                {
                    "name": "nvidia-driver-ctr",
                    "image": "nvcr.io/x:1",
                    "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
                },
                {"name": "sidecar", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}},
            ],
        },
    }


def test_the_caches_keep_what_the_follower_reads_and_drop_managed_fields() -> None:
    pod = _pod_with_everything()
    slim = slim_pod(copy.deepcopy(pod))
    assert (
        waiting_pods(slim)
        == waiting_pods(pod)
        == [
            PodStatus(
                "nvidia-driver-daemonset-abcde",
                "gpu-7",
                "Pending",
                "ErrImagePull",
                "not found",
                "nvidia-driver-ctr",
                "nvcr.io/x:1",
            )
        ]
    )
    assert "managedFields" not in json.dumps(slim) and "ownerReferences" not in json.dumps(slim)
    assert len(json.dumps(slim)) < len(json.dumps(pod)) * 0.55  # a container waiting on a failure keeps its image
    running = copy.deepcopy(pod)
    running["status"]["containerStatuses"][0]["state"] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    running["status"]["initContainerStatuses"] = []
    assert "nvcr.io" not in json.dumps(slim_pod(running))  # a running one does not
    running["status"]["containerStatuses"][1]["restartCount"] = 2  # running again after failures: kept, without image
    assert waiting_pods(slim_pod(copy.deepcopy(running))) == waiting_pods(running)
    assert waiting_pods(running) == [
        PodStatus("nvidia-driver-daemonset-abcde", "gpu-7", "Pending", "", "", "sidecar", "", restarts=2)
    ]
    node = {
        "metadata": {
            "name": "gpu-7",
            "labels": {LABEL_UPGRADE_STATE: "upgrade-done", "kubernetes.io/hostname": "gpu-7"},
            "managedFields": [{"manager": "kubelet"}],
        },
        "spec": {
            "taints": [
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                {"key": "soft", "effect": "PreferNoSchedule"},  # never keeps a DaemonSet pod away
            ]
        },
        "status": {"capacity": {"nvidia.com/gpu": "8"}},
    }
    assert slim_node(node) == {
        "metadata": {"name": "gpu-7"},
        "labels": {LABEL_UPGRADE_STATE: "upgrade-done"},
        "taints": [{"key": "nvidia.com/gpu", "value": None, "effect": "NoSchedule"}],
    }
    policy = {"metadata": {"name": "cluster-policy", "managedFields": [{}]}, "status": {"state": "ready"}}
    assert without_managed_fields(policy) == {"metadata": {"name": "cluster-policy"}, "status": {"state": "ready"}}


async def test_a_slim_pod_cache_reads_the_same_as_the_whole_pods(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("existing-install-plain")
    async with connected(demo) as cluster:
        namespace = await cluster.namespace(await cluster.live_plan())
        whole = {p["metadata"]["name"]: p for p in await cluster.gateway.list_pods(namespace)}
        cache = WatchCache(cluster.gateway, "pods", asyncio.Event(), namespace=namespace, slim=slim_pod)
        task = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.listed.wait(), 10)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    # a settled install: the cache holds the same pods, each cut to what the follower reads of it
    assert whole and set(cache.objects) == set(whole)
    for name, pod in whole.items():
        assert cache.objects[name] == slim_pod(pod)
        assert waiting_pods(cache.objects[name]) == waiting_pods(pod)
        assert (
            "managedFields" not in cache.objects[name]["metadata"] and "containers" not in cache.objects[name]["spec"]
        )
