"""The host probe's follower when its watch of the probe pods fails, against the demo cluster over real HTTPS.

The demo refuses the watch (500, 429, 403), drops it mid-stream, or ends it at its ``timeoutSeconds``;
the follower must watch on from the resourceVersion it had (no list, which would re-read every probe pod),
wait between failures under the one reconnect policy, and end with a reason naming what failed when the
failure persists. The pods start after 1.5 s, so every fault lands while the nodes are still pending.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.faults import faults_off
from wizard.cluster.core import watchcache
from wizard.cluster.gateway import watches
from wizard.cluster.probes.hostprobe import HostRun, run_on_hosts
from wizard.engine.nodescript import Step
from wizard.retry import Policy

pytestmark = pytest.mark.timeout(30)

NS = "gpu-operator"
IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
STEPS = [Step("hostname", ("cat", "/etc/hostname"), host=True)]
PROBE_PODS = f"/api/v1/namespaces/{NS}/pods"


@pytest.fixture(scope="module")
def slow_pods_demo(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    return demo_cluster_module("noexec-run", pod_start_latency=1.5)


@pytest.fixture
def demo(slow_pods_demo: DemoClusterThread) -> Iterator[DemoClusterThread]:
    with faults_off(slow_pods_demo):
        yield slow_pods_demo


@dataclass
class Requests:
    """The probe pods' list and watch requests as the demo received them: ``(kind, resourceVersion, when)``."""

    seen: list[tuple[str, str, float]] = field(default_factory=list)

    def of(self, kind: str) -> list[tuple[str, str, float]]:
        return [r for r in self.seen if r[0] == kind]


def record(demo: DemoClusterThread, *, fault_watches: bool = False, drop_first_watch_after: float = 0.0) -> Requests:
    """Record the probe pods' requests; fault the watches (``error_*`` faults), or drop the first one mid-stream."""
    requests = Requests()

    def when(request: web.Request) -> bool:
        if request.path != PROBE_PODS or "gpu-wizard" not in request.query.get("labelSelector", ""):
            return False
        watch = request.query.get("watch") in ("true", "1")
        requests.seen.append(("watch" if watch else "list", request.query.get("resourceVersion", ""), time.monotonic()))
        if watch and drop_first_watch_after and len(requests.of("watch")) == 1:
            transport = request.transport
            assert transport is not None
            asyncio.get_running_loop().call_later(drop_first_watch_after, transport.abort)
        return watch and fault_watches

    demo.faults.when = when
    return requests


async def probe(demo: DemoClusterThread, timeout: float = 10.0, took: list[float] | None = None) -> dict[str, HostRun]:
    """Every GPU node's HostRun of one run; ``took`` gets the run's seconds (connecting and discovery left out)."""
    async with connected(demo) as cluster:
        nodes = sorted(n.name for n in (await cluster.discover()).gpu_nodes)
        started = time.monotonic()
        runs = run_on_hosts(cluster.gateway, nodes, STEPS, namespace=NS, image=IMAGE, timeout=timeout)
        by_node = {r.node: r async for r in runs if isinstance(r, HostRun)}
        if took is not None:
            took.append(time.monotonic() - started)
    assert sorted(by_node) == nodes
    return by_node


@pytest.mark.parametrize("code", [500, 429])
async def test_a_watch_refused_once_is_opened_again_from_its_version_after_a_pause(
    demo: DemoClusterThread, code: int
) -> None:
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.budget = 1.0, code, 1
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs
    (_, first, refused), (_, again, reopened), *_ = requests.of("watch")
    assert faults.injected["error"] == 1 and requests.of("list") == []  # watched on, not listed again
    assert again == first and reopened - refused >= 0.9  # RECONNECT's first wait (1 s, less the clocks' slack)


async def test_a_watch_refused_429_is_opened_again_after_the_retry_after_the_server_asked(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=0.01, cap=0.01))  # far below 1 s
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.retry_after_s, faults.budget = 1.0, 429, 1, 1
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs
    (_, first, refused), (_, again, reopened), *_ = requests.of("watch")
    assert again == first and reopened - refused >= 0.9  # the server's Retry-After: 1, not the 0.01 s backoff


async def test_a_retry_after_longer_than_the_run_ends_at_its_deadline(demo: DemoClusterThread) -> None:
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.retry_after_s = 1.0, 429, 10
    record(demo, fault_watches=True)
    took: list[float] = []
    runs = await probe(demo, timeout=1.0, took=took)
    assert took[0] < 6  # the 1 s deadline (and the clean-up), not the server's 10 s
    for run in runs.values():
        assert "(watching the probe pods failed: watching pods in gpu-operator: TooManyRequests" in run.error, run


async def test_a_watch_dropped_mid_stream_is_opened_again_from_its_version(demo: DemoClusterThread) -> None:
    requests = record(demo, drop_first_watch_after=0.2)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs  # not "lost track of the probe pods"
    watches = requests.of("watch")
    assert len(watches) >= 2 and int(watches[1][1]) >= int(watches[0][1]) and requests.of("list") == []


async def test_a_watch_the_server_ends_goes_on_from_its_last_bookmark(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "WATCH_TIMEOUT_S", 1)
    requests = record(demo)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs
    watches = requests.of("watch")
    assert len(watches) >= 2 and requests.of("list") == []
    assert int(watches[1][1]) > int(watches[0][1])  # the bookmark the server ended the watch with moved it on
    assert watches[1][2] - watches[0][2] < 1.9  # its 1 s, then at once: RECONNECT's 1 s wait would make it 2 s


async def test_a_watch_the_server_ends_at_once_with_nothing_is_opened_again_after_a_backoff(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=0.2, cap=0.2))
    faults = demo.faults
    faults.silent_watch_s, faults.budget = 0.0, 2  # two watches end at once, empty; the third is served
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs
    (_, _, first), (_, _, second), (_, _, third), *_ = requests.of("watch")
    assert faults.injected["silent_watch"] == 2 and requests.of("list") == []
    assert second - first >= 0.19 and third - second >= 0.19  # the policy's backoff, not a tight loop


async def test_a_server_that_ends_every_watch_at_once_is_given_up_on_naming_it(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=3, initial=0.05, cap=0.05))
    demo.faults.silent_watch_s = 0.0
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert len(requests.of("watch")) == 3  # the policy's attempts, not a request loop
    for run in runs.values():
        assert run.error.startswith(
            "lost track of the probe pods: watching pods in gpu-operator: the server ended the watch after 0.0s"
        ), run
        assert "proxy" in run.hint


async def test_a_watch_refused_for_good_ends_naming_the_refusal(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=3, initial=0.05, cap=0.05))
    faults = demo.faults
    faults.error_rate, faults.error_code = 1.0, 403
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert len(requests.of("watch")) == 3  # the policy's attempts, not a request loop
    for run in runs.values():
        assert run.error.startswith("lost track of the probe pods: watching pods in gpu-operator: Forbidden"), run
        assert "\n" not in run.error and "ask a cluster admin" in run.hint


async def test_the_deadline_says_the_watch_was_failing(demo: DemoClusterThread) -> None:
    faults = demo.faults
    faults.error_rate, faults.error_code = 1.0, 403
    requests = record(demo, fault_watches=True)
    runs = await probe(demo, timeout=1.0)  # before the pods answer, and before RECONNECT gives up
    assert len(requests.of("watch")) <= 2
    for run in runs.values():
        assert run.error.startswith("no probe result within 1s: the probe pod is still"), run
        assert "(watching the probe pods failed: watching pods in gpu-operator: Forbidden" in run.error


async def test_a_watch_the_server_holds_silent_times_out_on_the_client_and_is_opened_again(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "WATCH_TIMEOUT_S", 1)
    monkeypatch.setattr(watches, "WATCH_SLACK_S", 0.5)  # the client gives a watch up 1.5 s after it opened it
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=0.05, cap=0.05))
    faults = demo.faults
    faults.silent_watch_s, faults.budget = 10.0, 1  # the first watch: 200, then nothing (no bookmark, no end)
    requests = record(demo, fault_watches=True)
    runs = await probe(demo)
    assert all(run.ran for run in runs.values()), runs
    (_, first, held), (_, again, reopened), *_ = requests.of("watch")
    assert faults.injected["silent_watch"] == 1 and requests.of("list") == []
    assert again == first and 1.5 <= reopened - held < 3  # the client's limit, then the backoff


async def test_a_watch_answered_by_error_pages_ends_naming_the_status_in_one_line(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=2, initial=0.05, cap=0.05))
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.error_page = 1.0, 502, "<html>\n<h1>Bad Gateway</h1>\n</html>\n"
    record(demo, fault_watches=True)  # a proxy's page, not a Status
    runs = await probe(demo)
    for run in runs.values():
        assert run.error == "lost track of the probe pods: watching pods in gpu-operator: Bad Gateway", run
