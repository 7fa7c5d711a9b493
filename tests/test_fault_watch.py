"""The node watch under 410 Gone with the change forced into each window where a watch can lose it.

The fault matrix's ``watch-410`` cell (a label change must reach the watcher while the demo expires
every watch) failed now and then in the full suite: the label PATCH raced the watcher's relist. Here
the change is made by the demo server itself at the exact moment that matters (from the fault
filter's ``when`` hook, on the server's loop, before the request is served), so every run takes the
same path.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable

import pytest
from aiohttp import web

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from wizard.cluster.facade import Cluster

pytestmark = pytest.mark.timeout(30)


def label_node(demo: DemoClusterThread, node: str, value: str) -> None:
    """Set the ``fault-matrix`` label in the demo's store (on the server's loop, as a PATCH would)."""
    obj = demo.store.get("nodes", node)
    assert obj is not None
    obj["metadata"].setdefault("labels", {})["fault-matrix"] = value
    demo.store.update("nodes", obj)


def patch_before(demo: DemoClusterThread, node: str, value: str, *, watch: bool) -> Callable[[web.Request], bool]:
    """A fault filter that, once the first 410 was sent, labels ``node`` just before the next node
    request of the given kind (a list: ``watch=False``; a watch: ``watch=True``) is served."""
    done = False

    def when(request: web.Request) -> bool:
        nonlocal done
        is_watch = request.query.get("watch") in ("true", "1")
        if not done and is_watch == watch and demo.faults.injected["watch_expiry"] >= 1:
            done = True
            label_node(demo, node, value)
        return True

    return when


async def seen(cluster: Cluster, node: str, value: str) -> str:
    """The kind of the first watch event saying ``node`` has the label value."""
    async for kind, facts in cluster.watch_nodes():
        if facts.name == node and facts.labels.get("fault-matrix") == value:
            return kind
    raise AssertionError("the watch ended")


async def watch_sees_change(demo: DemoClusterThread, *, before_watch: bool, budget: int | None) -> str:
    value = uuid.uuid4().hex[:8]
    async with connected(demo) as cluster:
        node = (await cluster.discover()).nodes[0].name
        faults = demo.faults
        faults.only, faults.watch_expiry_s, faults.budget = ["/api/v1/nodes"], 0.1, budget
        faults.when = patch_before(demo, node, value, watch=before_watch)
        task = asyncio.create_task(seen(cluster, node, value))
        try:
            return await asyncio.wait_for(task, 5.0)
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


@pytest.mark.parametrize("budget", [1, None], ids=["transient", "persistent"])
async def test_a_label_change_between_the_410_and_the_relist_is_reported(
    faults_demo: DemoClusterThread, budget: int | None
) -> None:
    """No watch is open while the label changes: only the relist can tell, and a label is a change."""
    assert await watch_sees_change(faults_demo, before_watch=False, budget=budget) == "MODIFIED"


async def test_a_label_change_between_the_relist_and_the_next_watch_is_reported(faults_demo: DemoClusterThread) -> None:
    """The next watch starts from the relist's resourceVersion, so the server replays the change."""
    assert await watch_sees_change(faults_demo, before_watch=True, budget=1) == "MODIFIED"


async def test_a_discover_by_another_caller_meanwhile_does_not_move_the_watch_past_a_change(
    faults_demo: DemoClusterThread,
) -> None:
    """The watch resumes from its own resourceVersion, not from anyone's later read: another caller's discover
    while the watch reconnects reads the session's one node cache (no list of its own: issue 38) and moves nothing,
    and this watch's caller is told of the change once the watch is open again."""
    value = uuid.uuid4().hex[:8]
    async with connected(faults_demo) as cluster:
        node = (await cluster.discover()).nodes[0].name
        faults = faults_demo.faults
        labelled = False

        def when(request: web.Request) -> bool:
            nonlocal labelled
            if labelled or request.query.get("watch") not in ("true", "1"):
                return False
            labelled = True
            label_node(faults_demo, node, value)
            return True  # this watch is held (latency), then fails (500) before it serves anything: it reconnects

        faults.only, faults.latency_ms, faults.when = ["/api/v1/nodes"], 1000, when
        faults.error_rate, faults.error_code = 1.0, 500  # not a dropped connection: aiohttp would re-send that itself
        task = asyncio.create_task(seen(cluster, node, value))
        try:
            for _ in range(500):
                if labelled:
                    break
                await asyncio.sleep(0.01)
            other = {n.name: n for n in (await cluster.discover()).nodes}  # another caller (a TUI step) reads
            assert node in other and not task.done()
            assert await asyncio.wait_for(task, 8.0) == "MODIFIED"
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def test_discovery_lists_again_when_its_continue_token_expired(
    faults_demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list whose first page's revision was compacted away between pages (a real server answers the
    continue token 410 Expired) is read again from its first page, not failed and not half old, half new."""
    from wizard.cluster.core import discovery

    monkeypatch.setattr(discovery, "PAGE_SIZE", 1)  # a page per node: the scenario's few nodes page too
    compacted = 0

    def when(request: web.Request) -> bool:
        nonlocal compacted
        if request.query.get("continue") and not compacted:
            compacted += 1
            node = faults_demo.store.list("nodes")[-1]["metadata"]["name"]
            label_node(faults_demo, node, uuid.uuid4().hex[:8])  # a write after the first page's revision,
            faults_demo.store.compact()  # then that revision compacted away
        return True

    async def run() -> list[str]:
        async with connected(faults_demo) as cluster:
            faults_demo.faults.when = when
            return sorted(n.name for n in (await cluster.discover()).nodes)

    names = asyncio.run(run())
    assert compacted == 1
    assert names == sorted(n["metadata"]["name"] for n in faults_demo.store.list("nodes"))
