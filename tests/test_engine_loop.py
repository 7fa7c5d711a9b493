"""The engine keeps the event loop (the TUI's) live: big lists are handled in slices that yield, and
TLS contexts, each loading the system's CA store, are not built again and again on the loop.

Not timings: what must yield does, what must be built once is, what must run in a thread does.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import certifi
import pytest

from tests.helpers.cluster import connected, upstream_plan
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.render_cases import node
from wizard import collector
from wizard.cluster.applying import apply as applying
from wizard.cluster.applying import apply_preview
from wizard.cluster.core.discovery import node_cache
from wizard.cluster.core.rollout_cache import slim_node
from wizard.cluster.core.slices import SLICE_S, Slices
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.gateway.writes import MERGE_PATCH
from wizard.demo.scenarios.scenario import load_scenario
from wizard.engine.facts import NodeFacts
from wizard.registry.client import RegistryClient


async def facts_in_slices(items: list[dict[str, Any]], slices: Slices) -> list[NodeFacts]:
    """Discovery's facts of a page, as its watch cache builds them (in ``slices``)."""
    cache = node_cache(cast(Any, None))
    cache.slices = slices
    return [node.facts for _, node in await cache.slimmed(items)]


class Ticks:
    """Counts how often a task of its own got the loop while ``work`` ran: 0 means ``work`` never yielded."""

    def __init__(self) -> None:
        self.count = 0

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0)
            self.count += 1

    async def around(self, work: Any) -> Any:
        ticker = asyncio.create_task(self._tick())
        await asyncio.sleep(0)  # the ticker starts
        before = self.count
        try:
            return await work
        finally:
            ticker.cancel()
            self.count -= before


@contextlib.contextmanager
def counted_tls_contexts() -> Iterator[list[str]]:
    """The names of the threads that built a default TLS context (``ssl.create_default_context``) meanwhile."""
    built: list[str] = []
    original: Callable[..., ssl.SSLContext] = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        built.append(threading.current_thread().name)
        return original(*args, **kwargs)

    ssl.create_default_context = counting  # type: ignore[assignment]
    try:
        yield built
    finally:
        ssl.create_default_context = original


async def test_discovery_builds_the_facts_of_a_page_in_slices_that_yield() -> None:
    items = [node(f"gpu-{i:03d}") for i in range(40)]
    names = [f"gpu-{i:03d}" for i in range(len(items))]
    ticks = Ticks()
    every = Slices(budget_s=0)  # every slice is spent at once: the loop gets a turn after each node
    assert [f.name for f in await ticks.around(facts_in_slices(items, every))] == names
    assert every.yields == len(items) and ticks.count >= len(items)
    never = Slices(budget_s=3600)
    assert [f.name for f in await ticks.around(facts_in_slices(items, never))] == names
    assert never.yields == 0 and ticks.count == 0  # the budget decides, not a count of nodes


async def test_discovery_hands_the_loop_back_at_its_own_budget_when_the_facts_take_longer() -> None:
    slices = Slices()
    items = [node(f"gpu-{i:04d}") for i in range(1000)]  # tens of milliseconds of facts: many slices' worth
    started = time.monotonic()
    await facts_in_slices(items, slices)
    assert time.monotonic() - started < 2 * SLICE_S or slices.yields >= 1


def test_bulk_reads_pause_the_collector_and_runs_freeze_what_they_keep_until_the_last_run_ends() -> None:
    enabled = gc.isenabled()
    gc.enable()
    try:
        first, second = collector.paused(), collector.paused()
        first.__enter__()
        assert not gc.isenabled()
        second.__enter__()
        first.__exit__(None, None, None)
        assert not gc.isenabled()  # the other read still decodes
        second.__exit__(None, None, None)
        assert gc.isenabled() and gc.get_freeze_count() == 0  # outside a run nothing is frozen (for good)
        with collector.frozen():
            started = gc.get_freeze_count()
            assert started > 0  # the nodes' facts and a front end's widgets are not rescanned meanwhile
            with collector.paused():
                kept = [[f"pod-{i}"] for i in range(1000)]  # lists: always tracked by the collector
            assert gc.get_freeze_count() >= started + len(kept) - 100  # what the read kept is skipped too
            with collector.frozen():  # verification runs the host probe inside: overlapping runs nest
                pass
            assert gc.get_freeze_count() > 0 and collector.runs() == 1
        # nothing stays frozen: a screen the user left is cyclic garbage and must be collectable
        assert gc.get_freeze_count() == 0 and collector.runs() == 0
    finally:
        gc.unfreeze()
        if not enabled:
            gc.disable()


def test_inside_a_run_what_a_pause_kept_is_frozen_before_the_collector_is_back() -> None:
    """The first object allocated after the collector came back (the generator's own StopIteration) set off a
    young collection over everything the pause kept: 85 ms after a discovery of 5,000 nodes, in the TUI."""
    enabled = gc.isenabled()
    gc.enable()
    passes: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(gc.get_count()[0])

    try:
        with collector.frozen():
            with collector.paused():
                kept = [[f"node-{i}"] for i in range(20_000)]  # far past the young generation's threshold
                gc.callbacks.append(seen)
            gc.callbacks.remove(seen)
            assert not passes, f"a collection ran as the pause ended (young generation: {passes})"
            assert gc.get_count()[0] < 100 and len(kept) == 20_000
    finally:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(seen)
        gc.unfreeze()
        if not enabled:
            gc.disable()


async def test_a_rollout_cache_lists_and_watches_in_slices_that_yield(demo_cluster: ClusterFactory) -> None:
    large = load_scenario("large")
    for spec in large.nodes:
        spec.count = min(spec.count, 50)  # 203 nodes: more than one page of LIST_PAGE
    demo = demo_cluster(large)
    async with connected(demo) as cluster:
        changed = asyncio.Event()
        cache: WatchCache[Any] = WatchCache(cluster.gateway, "nodes", changed, slim=slim_node)
        cache.slices = Slices(budget_s=0)  # spent at once: the cache yields after every object it takes in
        ticks = Ticks()
        await ticks.around(cache.relist(report=False))
        assert len(cache.objects) == 203 and cache.slices.yields >= 203
        assert ticks.count >= 203
        # the watch: a burst of events read without a pause yields as the list does
        cache.listed.clear()
        cache.resource_version = ""  # run() lists again first: count from the end of that list
        follower = asyncio.create_task(cache.run())
        try:
            await asyncio.wait_for(cache.listed.wait(), 10)
            listed = cache.slices.yields
            assert cache.lists == 2
            names = sorted(cache.objects)[:20]
            for name in names:
                await cluster.gateway.call(
                    "label",
                    cluster.gateway.raw(cluster.gateway.core, "patch_node"),
                    name,
                    {"metadata": {"labels": {"engine-loop": "burst"}}},
                    _content_type=MERGE_PATCH,
                )
            deadline = time.monotonic() + 10
            while cache.slices.yields < listed + len(names) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        finally:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
    assert cache.slices.yields >= listed + len(names)  # one pause per watch event


async def test_watches_build_no_tls_context(demo_cluster: ClusterFactory) -> None:
    # The client library's Watch built an ApiClient, and with it a TLS context loading the CA store, per watch.
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        first = await cluster.gateway.list_page("nodes", limit=1)
        rv = str(first["metadata"]["resourceVersion"])
        with counted_tls_contexts() as built:
            for _ in range(2):
                events = cluster.gateway.watch_resource("nodes", rv, timeout_seconds=1)
                async with contextlib.aclosing(events) as stream:
                    async for _event in stream:
                        pass
    assert built == []


async def test_registry_clients_share_one_tls_context_per_ca_built_off_the_loop() -> None:
    ca = certifi.where()
    with counted_tls_contexts() as built:
        clients = [RegistryClient(ca_file=ca, credentials={}) for _ in range(3)]
        for client in clients:
            async with client:
                pass
    assert len({id(c._ssl) for c in clients}) == 1
    assert isinstance(clients[0]._ssl, ssl.SSLContext)
    assert len(built) <= 1  # another test of this process may have built it already
    assert threading.main_thread().name not in built


async def test_prepare_and_apply_do_their_cpu_work_in_threads(
    demo_cluster: ClusterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, set[str]] = {}

    def recorded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            threads.setdefault(name, set()).add(threading.current_thread().name)
            return fn(*args, **kwargs)

        return run

    for module, name in ((apply_preview, "local_errors"), (apply_preview, "unified_diff"), (applying, "write_backup")):
        monkeypatch.setattr(module, name, recorded(name, getattr(module, name)))
    demo = demo_cluster("ubuntu-upstream")
    async with connected(demo) as cluster:
        from wizard.engine.render import render

        plan = upstream_plan()
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        assert (await cluster.apply(prepared, backup_dir=tmp_path)).ok
    assert set(threads) == {"local_errors", "unified_diff", "write_backup"}
    main = threading.main_thread().name
    assert all(main not in names for names in threads.values()), threads


def test_full_collections_wait_for_an_idle_moment_and_come_back_afterwards() -> None:
    before = gc.get_threshold()
    collector.defer_full_collections()
    try:
        assert gc.get_threshold()[2] > 10**6  # no full pass at a random moment (e.g. after an unfreeze)
        with collector.paused():
            assert not collector.collect_if_idle(min_interval_s=0)
    finally:
        collector.resume_full_collections()
    assert gc.get_threshold() == before


def test_the_interactive_policy_collects_only_when_the_user_and_the_process_are_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The TUI's collector policy (handed to it by wizard.launch): no full pass while the user types or while
    the process computes (a render in a thread at 5,000 nodes), one once both are idle and one is due."""
    clock = {"now": 1000.0, "cpu": 50.0}
    from types import SimpleNamespace

    monkeypatch.setattr(
        collector, "time", SimpleNamespace(monotonic=lambda: clock["now"], process_time=lambda: clock["cpu"])
    )
    monkeypatch.setattr(collector.gc, "get_count", lambda: (0, 0, collector.FULL_AFTER))
    collected: list[int] = []
    monkeypatch.setattr(collector.gc, "collect", lambda *a: collected.append(1) or 0)
    monkeypatch.setattr(collector, "_last_full", 0.0)
    before = gc.get_threshold()
    policy = collector.InteractivePolicy()
    policy.started()
    try:
        assert gc.get_threshold()[2] > 10**6 and gc.isenabled()
        clock["now"] += 1
        policy.user_input()
        clock["now"] += policy.CHECK_S
        assert not policy.check() and not collected  # a key 2 s ago: the user is there
        clock["now"] += policy.CHECK_S
        clock["cpu"] += policy.CHECK_S * 0.9  # a render in a thread, 90 % of a core
        assert not policy.check() and not collected
        clock["now"] += policy.CHECK_S
        clock["cpu"] += 0.01
        assert not policy.check() and not collected  # quiet for 2 s only: the work may go on
        clock["now"] += policy.CHECK_S
        clock["cpu"] += 0.01
        assert policy.check() and collected == [1]  # idle user, idle process for 3 s and more: the deferred full pass
    finally:
        policy.ended()
    assert gc.get_threshold() == before


def test_screens_name_no_collector_policy() -> None:
    """The TUI gets the collector policy from its entry point (wizard.launch); no screens module calls it."""
    screens = Path(__file__).resolve().parent.parent / "screens"
    named = [str(p) for p in screens.rglob("*.py") if "collector" in p.read_text(encoding="utf-8")]
    assert named == []


def test_the_tui_gets_the_collector_policy_from_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    import screens.app
    from wizard import launch

    handed: list[object] = []
    monkeypatch.setattr(screens.app, "run", lambda args, memory=None: handed.append(memory) or 0)
    monkeypatch.setattr("wizard.cli.common.check_tui_start", lambda **kwargs: None)  # no terminal under pytest
    assert launch._start_the_tui([]) == 0
    assert len(handed) == 1 and isinstance(handed[0], collector.InteractivePolicy)
