"""Driver pods left without an owner when ``useNvidiaDriverCRD`` turns on, on a node the operator never marks.

Seen on the real operator (v26.7.0, the lane's test_nvidiadriver_crds_on_leaves_nothing_behind): the ClusterPolicy
orphaned its driver pods after the NVIDIADriver's pods were created, its node labeller (which reconciles on a driver
pod's creation or start, not on the loss of an owner) left the nodes ``upgrade-done``, and the NVIDIADriver's pods
stayed ``Pending`` beside the old ones (anti-affinity) until the rollout timed out. The follower now marks such a
node ``upgrade-required`` after a grace, as the labeller would. The rule is pure; the mark is written to the demo over
real HTTPS.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.core.rollout_cache import slim_pod
from wizard.cluster.rollouts.orphans import OrphanMarker, orphaned_driver_pods
from wizard.engine.facts import LABEL_UPGRADE_STATE
from wizard.engine.leftovers import unmarked_orphans

DRIVER_LABELS = {"app.kubernetes.io/component": "nvidia-driver", "app": "nvidia-driver-daemonset"}


def _pod(name: str, node: str, *, owned: bool, phase: str = "Running", labels: dict[str, str] | None = None) -> Any:
    meta: dict[str, Any] = {"name": name, "labels": DRIVER_LABELS if labels is None else labels}
    if owned:
        meta["ownerReferences"] = [{"kind": "DaemonSet", "name": "nvidia-gpu-driver-ubuntu22.04-abc", "uid": "u"}]
    return slim_pod({"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}})


def test_only_running_driver_pods_without_an_owner_count_and_only_on_unmarked_nodes() -> None:
    pods = [
        _pod("old-a", "gpu-a", owned=False),
        _pod("new-a", "", owned=True, phase="Pending"),
        _pod("old-b", "gpu-b", owned=False),
        _pod("new-c", "gpu-c", owned=True),
        _pod("gone-d", "gpu-d", owned=False, phase="Succeeded"),
        _pod("other-e", "gpu-e", owned=False, labels={"app": "something-else"}),
    ]
    assert orphaned_driver_pods(pods) == {"gpu-a": "old-a", "gpu-b": "old-b"}
    states = {"gpu-a": "upgrade-done", "gpu-b": "pod-restart-required"}
    assert unmarked_orphans(orphaned_driver_pods(pods), states) == {"gpu-a": "old-a"}
    assert unmarked_orphans({"gpu-x": "old-x"}, {}) == {"gpu-x": "old-x"}  # no state label yet: unknown


async def test_the_marker_waits_its_grace_then_marks_each_node_once(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled", step_delay=0.0)
    async with connected(demo) as cluster:
        nodes = [n["metadata"]["name"] for n in (await cluster.gateway.list_nodes_page())["items"]]
        node = nodes[-1]
        pods = [_pod("nvidia-driver-daemonset-x1", node, owned=False)]
        marker = OrphanMarker(cluster.gateway, grace=0.3)
        await marker.mark(pods, {node: "upgrade-done"})
        assert marker.marked == {} and marker.words() == ""  # its clock starts: the operator may still do it
        await asyncio.sleep(0.35)
        await marker.mark(pods, {node: "upgrade-done"})
        assert marker.marked == {node: "nvidia-driver-daemonset-x1"}
        labels = (await cluster.gateway.read_node(node) or {})["metadata"]["labels"]
        assert labels[LABEL_UPGRADE_STATE] == "upgrade-required"
        assert f"marked {node} {LABEL_UPGRADE_STATE}=upgrade-required" in marker.words()

        await cluster.gateway.patch_node_labels(node, {LABEL_UPGRADE_STATE: "upgrade-done"})
        await asyncio.sleep(0.35)
        await marker.mark(pods, {node: "upgrade-done"})  # marked once: the upgrade controller owns it from there
        labels = (await cluster.gateway.read_node(node) or {})["metadata"]["labels"]
        assert labels[LABEL_UPGRADE_STATE] == "upgrade-done"


async def test_a_mark_the_server_refuses_is_said_with_the_command_and_not_retried(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled", step_delay=0.0)
    async with connected(demo) as cluster:
        marker = OrphanMarker(cluster.gateway, grace=0.0)
        pods = [_pod("nvidia-driver-daemonset-x2", "no-such-node", owned=False)]
        await marker.mark(pods, {})
        await marker.mark(pods, {})
        assert marker.marked == {} and list(marker.refused) == ["no-such-node"]
        words = marker.words()
        assert words.startswith("no-such-node keeps a driver pod with no owner") and words.count("kubectl label") == 1
        assert f"kubectl label node no-such-node {LABEL_UPGRADE_STATE}=upgrade-required --overwrite" in words
