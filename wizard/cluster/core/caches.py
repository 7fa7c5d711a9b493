"""The session's watch caches: one list and one watch per kind, shared by every follower, step and check.

k9s keeps one informer factory per session; this is the wizard's. :class:`Caches` (one per
:class:`wizard.cluster.core.session.Session`) holds a :class:`Feed` per key (resource, namespace, label selector):
one :class:`~wizard.cluster.core.watchcache.WatchCache` that lists the kind once, on its first read, and from then
on watches it for the rest of the session (reopened from its resourceVersion, relisted on 410, by
the cache's own rules). Readers then read what the cache holds instead of listing again, and followers each
get the changes from what they were last handed (:meth:`Feed.follow`): the Nodes step's table, the rollout's
node view and every later ``discover`` share one list and one watch of the nodes
(:class:`wizard.cluster.core.discovery.NodeDirectory`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar

from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway

T = TypeVar("T")


class Feed(Generic[T]):
    """One kind as the session follows it: :attr:`cache` (listed once), watched by one task for every follower."""

    def __init__(self, cache: WatchCache[T]) -> None:
        self.cache = cache
        self.task: asyncio.Task[None] | None = None
        self._followers: set[asyncio.Queue[tuple[str, T]]] = set()
        self._listing = asyncio.Lock()
        """Readers that arrive while the first list runs wait for it instead of listing too."""

    @property
    def watching(self) -> bool:
        """Whether the session's watch of the kind runs (what the cache holds is then current)."""
        return self.task is not None and not self.task.done()

    async def current(self) -> dict[str, T]:
        """The objects, by name: what the session's watch keeps current; the first read lists them (swapped in
        whole) and starts that watch from the list's resourceVersion (so does the first read after it failed)."""
        async with self._listing:
            if not self.watching:
                await self.cache.relist(report=False)
                self._start()
        return self.cache.objects

    def _start(self) -> None:
        if not self.watching:
            self.task = asyncio.create_task(self._watch(), name=f"gpu-wizard watch of {self.cache.resource}")
            # a watch that gave up with nobody following is seen by the next reader (it lists again)
            self.task.add_done_callback(lambda task: task.cancelled() or task.exception())

    async def _watch(self) -> None:
        async for change in self.cache.events():
            for queue in self._followers:
                queue.put_nowait(change)

    async def follow(self, since: dict[str, T]) -> AsyncGenerator[tuple[str, T], None]:
        """``(ADDED|MODIFIED|DELETED, object)`` from ``since`` (what the caller was last handed) on, until cancelled;
        the session's watch is started if it does not run yet (from the cache's list; a list first if none was).
        The watch's failure (its reconnect policy gave up) is raised here; the next follower starts it again."""
        if not self.watching:
            await self.current()
        queue: asyncio.Queue[tuple[str, T]] = asyncio.Queue()
        self._followers.add(queue)  # before the snapshot below, with no await between: no change falls in between
        try:
            self._start()
            assert self.task is not None
            task = self.task
            for change in await self.cache.changes(since, dict(self.cache.objects)):
                yield change
            while True:
                if queue.empty():
                    getter = asyncio.ensure_future(queue.get())
                    await asyncio.wait((getter, task), return_when=asyncio.FIRST_COMPLETED)
                    if not getter.done():
                        getter.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await getter
                        if queue.empty():
                            task.result()  # the watch gave up: its error
                            raise ClusterError(f"the watch of {self.cache.resource} ended", "connect again")
                        continue
                    yield getter.result()
                else:
                    yield queue.get_nowait()
        finally:
            self._followers.discard(queue)

    async def close(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ClusterError):
                await self.task


class Caches:
    """The session's feeds by (resource, namespace, label selector): each kind listed once and watched once."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._feeds: dict[tuple[Any, ...], Feed[Any]] = {}

    def feed(
        self,
        resource: str | tuple[str, str, str],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        slim: Callable[[dict[str, Any]], T],
        differ: Callable[[T, T], bool] | None = None,
        index: Callable[[T], tuple[Any, ...]] | None = None,
        page_size: int | None = None,
    ) -> Feed[T]:
        """The session's feed of that key (made on first use; one key keeps one ``slim``)."""
        key = (resource, namespace, label_selector)
        found = self._feeds.get(key)
        if found is None:
            extra: dict[str, Any] = {}
            if differ is not None:
                extra["differ"] = differ
            if page_size is not None:
                extra["page_size"] = page_size
            if index is not None:
                extra["index"] = index
            cache: WatchCache[T] = WatchCache(
                self.gateway, resource, namespace=namespace, label_selector=label_selector, slim=slim, **extra
            )
            found = self._feeds[key] = Feed(cache)
        if found.cache.slim is not slim:
            raise ValueError(f"{key}: the session keeps one kind of slim object per watch")
        return found

    async def close(self) -> None:
        """Stop every watch (the session ends)."""
        for feed in list(self._feeds.values()):
            await feed.close()


class FeedView(Generic[T]):
    """A follower's view of a session feed, read as a :class:`~wizard.cluster.core.watchcache.WatchCache` is (the rollout's
    snapshot reads ``items``, ``indexed_items``, ``last_change``; its loop waits on ``listed`` and runs ``run``):
    ``changed`` is set on every change; ``project`` turns a kept object into what this reader reads of it."""

    def __init__(self, feed: Feed[Any], changed: asyncio.Event, project: Callable[[Any], T] | None = None) -> None:
        self.feed = feed
        self.changed = changed
        self.project = project
        self.listed = asyncio.Event()
        cache = feed.cache
        self.gateway, self.resource, self.namespace = cache.gateway, cache.resource, cache.namespace
        self.label_selector, self.slim = cache.label_selector, cache.slim

    def items(self) -> list[T]:
        kept = self.feed.cache.items()
        return [self.project(obj) for obj in kept] if self.project is not None else kept

    def indexed_items(self) -> list[Any]:
        return self.feed.cache.indexed_items()

    @property
    def last_change(self) -> float:
        return self.feed.cache.last_change

    async def run(self) -> None:
        """Follow the session's watch (listing first if the session has no list yet) until cancelled."""
        if not self.feed.watching:
            await self.feed.current()
        self.listed.set()
        self.changed.set()
        changes = self.feed.follow(dict(self.feed.cache.objects))
        async with contextlib.aclosing(changes):
            async for _ in changes:
                self.changed.set()
