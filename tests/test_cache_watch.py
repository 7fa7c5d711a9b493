"""The rollout's watch caches (and the gateway's watch under them) when the server throttles a watch, ends it
at once, holds it silent or answers it with an error page, against the demo cluster over real HTTPS.

A :class:`~wizard.cluster.core.watchcache.WatchCache` of the nodes lists once and then watches on; the demo
answers its watch requests with the faults under test, and the test reads when each watch request
reached the server. The reconnect policy is cut to a few milliseconds, so any longer wait between two
watches is one the server asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.faults import faults_off
from wizard.cluster.core import watchcache
from wizard.cluster.core.rollout_cache import slim_node
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.gateway import watches
from wizard.cluster.gateway.watches import _DictWatch, _NotAnEvent
from wizard.retry import Policy

pytestmark = pytest.mark.timeout(30)

NODES = "/api/v1/nodes"


@pytest.fixture(scope="module")
def https_demo(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    return demo_cluster_module("sle-micro-precompiled")


@pytest.fixture
def demo(https_demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch) -> Iterator[DemoClusterThread]:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=0.01, cap=0.01))
    with faults_off(https_demo):
        yield https_demo


def record_watches(demo: DemoClusterThread, *, faulted: int) -> list[float]:
    """When each node watch request reached the demo; the first ``faulted`` of them get the demo's faults."""
    seen: list[float] = []

    def when(request: web.Request) -> bool:
        if request.path != NODES or request.query.get("watch") not in ("true", "1"):
            return False
        seen.append(time.monotonic())
        return len(seen) <= faulted

    demo.faults.when = when
    return seen


async def watches_of_a_node_cache(demo: DemoClusterThread, seen: list[float], count: int) -> WatchCache[Any]:
    """Run a node cache until the demo has seen ``count`` watch requests (or 10 s passed); the cache."""
    async with connected(demo) as cluster:
        cache: WatchCache[Any] = WatchCache(cluster.gateway, "nodes", asyncio.Event(), slim=slim_node)
        task = asyncio.create_task(cache.run())
        try:
            deadline = time.monotonic() + 10
            while len(seen) < count and time.monotonic() < deadline and not task.done():
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return cache


async def test_a_watch_refused_429_is_opened_again_after_the_retry_after_the_server_asked(
    demo: DemoClusterThread,
) -> None:
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.retry_after_s = 1.0, 429, 1
    seen = record_watches(demo, faulted=1)
    cache = await watches_of_a_node_cache(demo, seen, 2)
    assert len(seen) == 2 and faults.injected["error"] == 1
    assert seen[1] - seen[0] >= 0.9  # the server's Retry-After: 1, not the 0.01 s backoff
    assert cache.lists == 1 and cache.objects  # watched on from its version, not listed again


async def test_a_watch_the_server_ends_at_once_with_nothing_is_opened_again_after_a_backoff(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=0.2, cap=0.2))
    demo.faults.silent_watch_s = 0.0  # the first two watches end at once with no event, the third is served
    seen = record_watches(demo, faulted=2)
    cache = await watches_of_a_node_cache(demo, seen, 3)
    assert len(seen) == 3 and demo.faults.injected["silent_watch"] == 2
    assert seen[1] - seen[0] >= 0.19 and seen[2] - seen[1] >= 0.19  # the policy's backoff, not a tight loop
    assert cache.lists == 1


async def test_a_watch_that_ran_its_course_is_opened_again_at_once(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "RECONNECT", Policy(attempts=6, initial=1.0, cap=1.0))
    monkeypatch.setattr(watchcache, "WATCH_TIMEOUT_S", 1)  # each watch ends with a bookmark after 1 s
    seen = record_watches(demo, faulted=0)
    cache = await watches_of_a_node_cache(demo, seen, 3)
    assert len(seen) == 3 and cache.lists == 1
    assert seen[1] - seen[0] < 1.9 and seen[2] - seen[1] < 1.9  # its 1 s, then at once: a backoff would make it 2 s


async def test_a_watch_the_server_holds_silent_times_out_on_the_client_and_the_cache_stays_current(
    demo: DemoClusterThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchcache, "WATCH_TIMEOUT_S", 1)
    monkeypatch.setattr(watches, "WATCH_SLACK_S", 0.5)  # the client gives a watch up 1.5 s after it opened it
    demo.faults.silent_watch_s = 10.0  # the first watch: 200, then nothing (no event, no bookmark, no end)
    seen = record_watches(demo, faulted=1)
    node, value = demo.store.list("nodes")[0]["metadata"]["name"], uuid.uuid4().hex[:8]
    async with connected(demo) as cluster:
        cache = WatchCache(cluster.gateway, "nodes", asyncio.Event())  # whole nodes: every label
        task = asyncio.create_task(cache.run())
        try:
            while len(seen) < 2 and not task.done():
                await asyncio.sleep(0.01)
            obj = demo.store.get("nodes", node)  # a change once the second watch is open: it must reach the cache
            assert obj is not None
            obj["metadata"].setdefault("labels", {})["cache-watch"] = value
            demo.store.update("nodes", obj)
            while cache.objects[node]["metadata"]["labels"].get("cache-watch") != value:
                assert not task.done()
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    assert demo.faults.injected["silent_watch"] == 1 and cache.lists == 1
    assert 1.5 <= seen[1] - seen[0] < 3  # the client's limit, then the backoff


async def test_a_watch_answered_by_an_error_page_is_opened_again(demo: DemoClusterThread) -> None:
    faults = demo.faults
    faults.error_rate, faults.error_code, faults.error_page = 1.0, 503, "<html>\n<h1>503 Service Unavailable</h1>\n"
    seen = record_watches(demo, faulted=1)  # a proxy's page, not a Status: the cache must not die on it
    cache = await watches_of_a_node_cache(demo, seen, 2)
    assert len(seen) == 2 and faults.injected["error"] == 1 and cache.lists == 1


def test_a_line_of_a_streaming_watch_that_is_no_event_is_raised_not_handed_on() -> None:
    stream = _DictWatch()  # no response yet: a stream's line, not an error answer's
    for line in ("<html>\n", '{"kind":"Status"}\n'):  # not JSON; JSON with neither type nor object
        with pytest.raises(_NotAnEvent):
            stream.unmarshal_event(line, None)
