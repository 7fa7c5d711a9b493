"""What one verification costs the client, counted rather than timed, against the demo cluster over real HTTPS.

One exec per GPU node and a constant number of API writes; the host probe's watch decodes only the
events that can settle a node; the exec request is the one the generated client would send; the
stream's consumer hands the event loop back while it drains a long batch.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest

from tests.helpers.cluster import collect, connected, sle_plan
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.install import install_and_roll_out
from wizard.cluster.access.transport import exec_target
from wizard.cluster.core.slices import Slices
from wizard.cluster.gateway import watches as watches_module
from wizard.cluster.probes.hostprobe import HostRun, run_on_hosts
from wizard.cluster.probes.probefollow import _Follower, undecided
from wizard.cluster.verification.verify import Outbox
from wizard.engine.nodescript import Step
from wizard.engine.results import LogLine, Status

NS = "gpu-operator"
_WRITES = ("POST", "PUT", "PATCH", "DELETE")


async def test_one_verify_is_one_exec_per_node_and_a_constant_number_of_writes(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    requests: list[tuple[str, str]] = []
    async with connected(demo) as cluster:
        assert (await install_and_roll_out(cluster, sle_plan(), tmp_path)).startswith("ready")
        nodes = sorted(n.name for n in (await cluster.discover()).gpu_nodes)
        demo.cluster.faults.when = lambda r: requests.append((r.method, r.path)) or False
        checks, lines = await collect(cluster.verify(sle_plan(), no_registry="not asked here"))
    execs = [path for method, path in requests if path.endswith("/exec")]
    writes = Counter(path.rsplit("/", 1)[0] for method, path in requests if method in _WRITES)
    assert len(execs) == len(nodes) == 2
    # the host probe's DaemonSet and its deadline Job, each created and deleted: whatever the node count
    assert sum(writes.values()) == 4, writes
    assert {c.status for c in checks if c.check == "nvidia-smi"} == {Status.PASS}
    assert {line.node for line in lines} == set(nodes)


async def test_the_probe_watch_decodes_only_events_that_settle_a_node(
    demo_cluster: ClusterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[dict[str, Any]] = []
    skipped: list[str] = []
    unmarshal = watches_module._DictWatch.unmarshal_event

    def tally(self: Any, data: str, response_type: Any) -> Any:
        event = unmarshal(self, data, response_type)
        (skipped.append(data) if event is watches_module._SKIPPED else decoded.append(event))
        return event

    monkeypatch.setattr(watches_module._DictWatch, "unmarshal_event", tally)
    demo = demo_cluster("noexec-run", pod_start_latency=0.3)  # the pods are watched while they start
    async with connected(demo) as cluster:
        nodes = sorted(n.name for n in (await cluster.discover()).gpu_nodes)
        steps = [Step("usr", ("test", "-d", "/usr"), host=True)]
        image = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, steps, namespace=NS, image=image)]
    assert sorted(r.node for r in runs if isinstance(r, HostRun) and r.ran) == nodes
    assert skipped, "the pods' pending states were decoded"
    pods = [e for e in decoded if e["type"] in ("ADDED", "MODIFIED")]
    settled = {str(e["raw_object"]["metadata"]["name"]) for e in pods}
    # skipped: a pod that cannot answer yet, or one whose node is settled (its main container starting)
    assert all(undecided(line) or any(f'"name":"{name}"' in line for name in settled) for line in skipped)
    assert len(pods) <= len(nodes), [e["type"] for e in decoded]  # each settling event decoded once


def test_undecided_pod_states_are_told_apart_without_decoding() -> None:
    pending = {"metadata": {"name": "p"}, "status": {"phase": "Pending"}}
    running = {"status": {"phase": "Pending", "initContainerStatuses": [{"name": "probe", "state": {"running": {}}}]}}
    done = {"status": {"initContainerStatuses": [{"name": "probe", "state": {"terminated": {"exitCode": 0}}}]}}
    pulling = {"status": {"initContainerStatuses": [{"state": {"waiting": {"reason": "ImagePullBackOff"}}}]}}
    unschedulable = {"status": {"conditions": [{"type": "PodScheduled", "reason": "Unschedulable"}]}}
    failed = {"status": {"phase": "Failed"}}
    line = lambda pod: json.dumps({"type": "MODIFIED", "object": pod}, separators=(",", ":"))  # noqa: E731
    assert undecided(line(pending)) and undecided(line(running))
    assert not any(undecided(line(p)) for p in (done, pulling, unschedulable, failed))


def test_a_settled_pods_later_events_are_not_decoded() -> None:
    follower = _Follower(cast(Any, None), NS, "run-1", ["gpu-0", "gpu-1"], [Step("usr", ("true",), host=True)], "i")
    follower.settled.add("probe-a")
    pod = {
        "metadata": {"labels": {"app.kubernetes.io/name": "gpu-wizard-probe"}, "name": "probe-a"},
        "status": {"initContainerStatuses": [{"name": "probe", "state": {"terminated": {"exitCode": 0}}}]},
    }
    line = json.dumps({"type": "MODIFIED", "object": pod}, separators=(",", ":"))
    assert follower.skip(line)  # its node has its result: the main container's start is not decoded
    assert not follower.skip(line.replace("probe-a", "probe-b"))  # another pod's answer is


def test_the_exec_request_is_the_one_the_generated_client_builds() -> None:
    from kubernetes.aio import client
    from kubernetes.aio.stream import WsApiClient

    configuration = client.Configuration()
    configuration.host = "https://10.0.0.1:6443/k8s/clusters/c-1"
    command = ["sh", "-c", "nvidia-smi 2>&1; echo @@gpu-wizard:00:$? /x&y=1 +ü"]

    async def generated() -> str:
        api = WsApiClient(configuration=configuration)
        try:
            serialized = await client.CoreV1Api(api)._connect_get_namespaced_pod_exec_serialize(
                "nvidia-driver-daemonset-a b",
                NS,
                command,
                "nvidia-driver-ctr",
                True,
                False,
                True,
                False,
                None,
                None,
                None,
                0,
            )
        finally:
            await api.close()
        return str(serialized[1])

    theirs = urllib.parse.urlsplit(asyncio.run(generated()))
    # the URL the exec sends as it is (the server's path prefix, then the target)
    ours = urllib.parse.urlsplit(
        configuration.host + exec_target(NS, "nvidia-driver-daemonset-a b", "nvidia-driver-ctr", command)
    )
    assert ours.netloc == theirs.netloc
    assert ours.path == urllib.parse.unquote(theirs.path).replace(" ", "%20")
    assert sorted(urllib.parse.parse_qsl(ours.query)) == sorted(urllib.parse.parse_qsl(theirs.query))


async def test_draining_a_long_batch_hands_the_loop_back() -> None:
    outbox = Outbox()
    for i in range(300):
        outbox.put(LogLine(f"line {i}", "gpu-01", "stdout"))
    outbox.close()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before, taken = ticks, 0
    async for _ in outbox.drain():
        busy = time.monotonic() + 0.0005  # a consumer's work per item: 300 items hold the loop ~150 ms
        while time.monotonic() < busy:
            pass
        taken += 1
    task.cancel()
    assert taken == 300
    assert outbox.slices.yields >= 10 and ticks - before >= 10  # other tasks ran between the slices


async def test_draining_looks_at_the_slice_clock_after_every_item() -> None:
    """One mechanism, the slice's time budget: with a budget spent at once the consumer yields after each item,
    so a costly item (a redraw) cannot carry a slice past its budget by a count of items."""
    outbox = Outbox()
    outbox.slices = Slices(budget_s=0)
    outbox.put_many([LogLine(f"line {i}", "gpu-01", "stdout") for i in range(100)])
    outbox.close()
    assert len([item async for item in outbox.drain()]) == 100
    assert outbox.slices.yields == 100


async def test_slices_yield_only_once_their_budget_is_spent() -> None:
    slices = Slices(budget_s=3600)
    for _ in range(1000):
        await slices.pause()
    assert slices.yields == 0
    slices = Slices(budget_s=0)
    await slices.pause()
    assert slices.yields == 1


async def test_a_pod_still_starting_at_the_deadline_is_named_not_taken_for_a_missing_one(
    demo_cluster: ClusterFactory,
) -> None:
    demo = demo_cluster("noexec-run", pod_start_latency=60)  # bound, never started within the run
    async with connected(demo) as cluster:
        nodes = sorted(n.name for n in (await cluster.discover()).gpu_nodes)
        steps = [Step("usr", ("test", "-d", "/usr"), host=True)]
        image = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, steps, namespace=NS, image=image, timeout=1.0)]
    errors = {r.node: r.error for r in runs if isinstance(r, HostRun)}
    assert sorted(errors) == nodes
    assert all("the probe pod is still" in e and "no probe pod was created" not in e for e in errors.values()), errors
