"""What the demo simulation steps per change: a host probe's lifecycle costs O(its pods), never O(cluster).

Counted, not timed: ``Simulation.full_ticks`` (ticks that run every controller over every pod) and
``Simulation.pods_stepped`` (kubelet steps). A verification of 5,000 GPU nodes creates a deadline Job
and one probe DaemonSet, whose pods run a host script, then deletes both: each full tick on the way
stepped ~30,000 operand pods.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.helpers.sim import NS, cluster_policy, pods_of, settle, world
from wizard.cluster.probes.probeset import anchor_job, daemonset
from wizard.demo.sim import controllers, simutil
from wizard.engine.nodescript import Step


async def _upstream_world() -> tuple[Any, Any, list[str]]:
    sim, store = world("ubuntu-upstream")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    gpu_nodes = sorted(pods_of(store))
    assert gpu_nodes
    return sim, store, gpu_nodes


def _probe_pods(store: Any) -> list[dict[str, Any]]:
    return [p for p in store.list("pods", NS) if p["metadata"]["name"].startswith("gpu-wizard-probe-")]


async def test_a_probe_daemonsets_lifecycle_steps_its_own_pods_not_the_cluster() -> None:
    sim, store, nodes = await _upstream_world()
    operand_pods = len(store.list("pods"))
    assert operand_pods >= 3 * len(nodes)
    full, stepped, controller_runs = sim.full_ticks, sim.pods_stepped, sim.changes.daemonset_runs
    steps = [Step("uname", ("uname", "-r"), host=True), Step("true", ("true",))]
    job = store.create("jobs", anchor_job("gpu-wizard-probe-t", NS, image="busybox:1.36", run_id="t", deadline_s=600))
    body = daemonset(
        "gpu-wizard-probe-t", NS, nodes, steps, image="busybox:1.36", run_id="t", tolerations=[], sleep_s=600, owner=job
    )
    store.create("daemonsets", body)
    await settle(sim)
    pods = _probe_pods(store)
    assert sorted(p["spec"]["nodeName"] for p in pods) == nodes
    for pod in pods:
        (probe,) = pod["status"]["initContainerStatuses"]
        done = probe["state"]["terminated"]
        assert done["exitCode"] == 0 and [code for code, *_ in json.loads(done["message"])["r"]] == [0, 0]
        assert pod["status"]["phase"] == "Running"
    ds = store.get("daemonsets", "gpu-wizard-probe-t", NS)
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] == len(nodes)

    store.delete("jobs", "gpu-wizard-probe-t", NS)  # the garbage collector takes the DaemonSet and its pods
    await settle(sim)
    assert store.get("daemonsets", "gpu-wizard-probe-t", NS) is None and _probe_pods(store) == []
    assert len(store.list("pods")) == operand_pods

    assert sim.full_ticks == full, "a probe's Job, DaemonSet and pods set off a full tick"
    assert sim.pods_stepped - stepped <= 6 * len(nodes)
    # The DaemonSet's controller runs when its pods come, go or change readiness, not for every status write.
    assert sim.changes.daemonset_runs - controller_runs <= 4


async def test_a_change_an_operator_reads_runs_a_full_tick_that_steps_only_the_pods_it_concerns() -> None:
    sim, store, nodes = await _upstream_world()
    full, stepped = sim.full_ticks, sim.pods_stepped
    node = store.get("nodes", nodes[0])
    node["metadata"]["labels"]["example.com/touched"] = "yes"
    store.update("nodes", node)
    await settle(sim)
    ticks = sim.full_ticks - full
    assert ticks >= 1
    on_the_node = [p for p in store.list("pods") if p["spec"].get("nodeName") == nodes[0]]
    assert len(on_the_node) < len(store.list("pods")) / 2
    # The others' pods are steady: the same stored objects and node views as at their last step.
    assert sim.pods_stepped - stepped <= ticks * len(on_the_node)


def _start_probe(store: Any, nodes: list[str]) -> None:
    steps = [Step("uname", ("uname", "-r"), host=True)]
    job = store.create("jobs", anchor_job("gpu-wizard-probe-t", NS, image="busybox:1.36", run_id="t", deadline_s=600))
    body = daemonset(
        "gpu-wizard-probe-t", NS, nodes, steps, image="busybox:1.36", run_id="t", tolerations=[], sleep_s=600, owner=job
    )
    store.create("daemonsets", body)


async def test_a_long_tick_hands_the_loop_back_and_keeps_what_was_written_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real API server answers while its kubelets work; the demo's tick pauses between pods (here between
    # every two), and a pod someone wrote during a pause must not be overwritten by the kubelet's older copy.
    monkeypatch.setattr(simutil, "TICK_SLICE_S", 0.0)
    sim, store, nodes = await _upstream_world()
    _start_probe(store, nodes)
    written: dict[str, set[str]] = {}
    done = False

    async def annotate_a_probe_pod_each_turn() -> None:
        turn = 0
        while not done and turn < 3 * len(nodes):
            await asyncio.sleep(0)
            pods = _probe_pods(store)
            if not pods:
                continue
            pod = pods[turn % len(pods)]
            key = f"example.com/turn-{turn}"
            pod["metadata"].setdefault("annotations", {})[key] = "x"
            store.update("pods", pod)
            written.setdefault(pod["metadata"]["name"], set()).add(key)
            turn += 1

    task = asyncio.create_task(annotate_a_probe_pod_each_turn())
    await settle(sim)
    done = True
    await task
    assert sum(len(keys) for keys in written.values()) >= len(nodes), "the ticks never handed the loop back"
    for pod in _probe_pods(store):
        assert written.get(pod["metadata"]["name"], set()) <= set(pod["metadata"].get("annotations") or {})
        (probe,) = pod["status"]["initContainerStatuses"]
        assert probe["state"]["terminated"]["exitCode"] == 0 and pod["status"]["phase"] == "Running"


async def test_a_daemonset_fills_its_nodes_a_burst_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(controllers, "BURST_REPLICAS", 2)  # Kubernetes' controller: 250 pods per sync
    sim, store, nodes = await _upstream_world()
    assert len(nodes) > 2
    _start_probe(store, nodes)
    await sim.tick()
    assert len(_probe_pods(store)) == 2
    await settle(sim)
    assert sorted(p["spec"]["nodeName"] for p in _probe_pods(store)) == nodes
    ds = store.get("daemonsets", "gpu-wizard-probe-t", NS)
    assert ds["status"]["numberReady"] == ds["status"]["currentNumberScheduled"] == len(nodes)


async def test_a_daemonset_sync_pauses_between_pods_and_stops_when_its_daemonset_goes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(simutil, "TICK_SLICE_S", 0.0)  # a pause after every pod the sync creates
    sim, store, nodes = await _upstream_world()
    assert len(nodes) > 2
    _start_probe(store, nodes)
    tick = asyncio.create_task(sim.tick())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    created_before = len(_probe_pods(store))
    assert 0 < created_before < len(nodes), "the sync did not hand the loop back between its pods"
    store.delete("daemonsets", "gpu-wizard-probe-t", NS)
    await tick
    assert len(_probe_pods(store)) <= created_before + 1
    await settle(sim)
    assert _probe_pods(store) == [], "the pods of a DaemonSet deleted mid-sync outlived it"
