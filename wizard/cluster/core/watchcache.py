"""The one watch cache: objects of one kind listed in pages, then kept current by a watch from the list's resourceVersion.

Discovery's node facts (:mod:`wizard.cluster.core.discovery`), the rollout follower's five kinds
(:mod:`wizard.cluster.rollouts.rollout`, slim objects in :mod:`wizard.cluster.core.rollout_cache`) and the host probe's
pods (:mod:`wizard.cluster.probes.probefollow`) all follow the cluster this way, so the protocol lives here once:

* **list in pages** of ``page_size``, the next page requested while this one is taken in (its server time
  and transfer overlap the caller's work); a continue token that expired (410) reads the list again from
  its first page, as client-go's pager does; the cyclic collector is paused meanwhile
  (:func:`wizard.collector.paused`: decoding 5,000 nodes allocates about a million containers);
* **watch from the resourceVersion**, opened again from the last one seen when it ends or fails;
  failures wait under the one reconnect policy (:data:`wizard.retry.RECONNECT`, the server's Retry-After
  honoured, reset by any event) and the last one is raised once its attempts are used up;
* **relist on 410** (the version is too old), telling a caller only what changed;
* **slim objects**: each object is cut to ``slim(object)`` as it enters (facts, a pod's few fields), and an
  optional ``index`` keeps the few entries a reader looks for (the pods that wait);
* **time slices** (:class:`wizard.cluster.core.slices.Slices`): the loop is handed back while thousands of listed
  objects or a burst of events are taken in, and what the cache keeps is frozen every :data:`KEEP_EVERY`
  events (:func:`wizard.collector.keep`).

A cache that keeps nothing (``keep=False``: the host probe forgets a settled pod) streams what it lists as
``ADDED`` events instead; ``since`` starts the first watch at a known version without a list, and ``skip``
leaves the events the caller has no use for undecoded (:meth:`wizard.cluster.gateway.watches.Watches.watch`).
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any, Generic, TypeVar

from wizard import collector
from wizard.cluster.core.slices import Slices
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.retry import RECONNECT, Reconnects

T = TypeVar("T")

KEEP_EVERY = 2000
"""Watch events after which a cache freezes what it keeps (:func:`wizard.collector.keep`)."""
WATCH_TIMEOUT_S = 300
"""How long the server keeps one watch open (``timeoutSeconds``); the cache then watches on from where it was."""
EXPIRED_LIST_RETRIES = 2
"""Fresh lists after a continue token expired mid-list (each of 5,000 nodes takes about a second)."""
PAGE_SIZE = 100
"""Objects per page unless a caller says otherwise: a page is decoded in one go on the event loop (500 of the
operator's pods took 40-150 ms)."""
CHANGES = ("ADDED", "MODIFIED", "DELETED")


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


class WatchCache(Generic[T]):
    """Objects of one kind (``resource``, with ``namespace`` and ``label_selector``) as ``slim(object)``, by name.

    :meth:`relist` lists them (swapped in whole: a reader between two pages never sees half a list);
    :meth:`events` follows them from there, ``(ADDED|MODIFIED|DELETED, slim object)``, until cancelled;
    :meth:`run` follows them for readers of :attr:`objects`. ``changed`` (if given) is set on every change
    so a reader wakes up only when something happened; :attr:`listed` is set after every list.
    """

    def __init__(
        self,
        gateway: Gateway,
        resource: str | tuple[str, str, str],
        changed: asyncio.Event | None = None,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        slim: Callable[[dict[str, Any]], Any] = lambda obj: obj,
        index: Callable[[Any], tuple[Any, ...]] | None = None,
        differ: Callable[[Any, Any], bool] = operator.ne,
        page_size: int = PAGE_SIZE,
        keep: bool = True,
        since: str = "",
        skip: Callable[[str], bool] | None = None,
    ) -> None:
        self.gateway = gateway
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.changed = changed
        self.slim: Callable[[dict[str, Any]], T] = slim
        self.index = index
        self.differ = differ
        """Whether a relist shows an object changed (discovery's facts compare their labels too)."""
        self.page_size = page_size
        self.keep = keep
        self.skip = skip
        self.resource_version = since
        """Of the last complete list or the last watch event: where the next watch starts ("": list first)."""
        self.objects: dict[str, T] = {}
        self.indexed: dict[str, tuple[Any, ...]] = {}
        """Name -> ``index(object)`` for the objects where it is not empty, kept as objects come and go (a
        snapshot reads the few pods that wait instead of scanning every pod of 5,000 nodes)."""
        self.listed = asyncio.Event()
        self.last_change = 0.0
        """``time.monotonic()`` of the last list or of the last watch event that changed a kept slim object (an
        update that leaves the slim object as it was, a node's heartbeat, is none): how long the kind has been quiet."""
        self.lists = 0
        """How many times the kind was listed (1 unless watches expired)."""
        self.trouble: ClusterError | None = None
        """The watch's last failure while no event has come since."""
        self.slices = Slices()
        """The cache's own time slices: several caches' slices may run back to back in one loop iteration when
        all their watches have data, so each is short."""

    def items(self) -> list[T]:
        return [self.objects[name] for name in sorted(self.objects)]

    def indexed_items(self) -> list[Any]:
        """The ``index`` entries of every object, in name order."""
        return [entry for name in sorted(self.indexed) for entry in self.indexed[name]]

    def put(
        self, name: str, obj: T, objects: dict[str, T] | None = None, indexed: dict[str, Any] | None = None
    ) -> None:
        """``obj`` under ``name`` (in the cache, or in a list being built aside), its index entries with it."""
        objects = self.objects if objects is None else objects
        indexed = self.indexed if indexed is None else indexed
        objects[name] = obj
        entries = self.index(obj) if self.index is not None else ()
        if entries:
            indexed[name] = entries
        else:
            indexed.pop(name, None)

    def drop(self, name: str) -> None:
        self.objects.pop(name, None)
        self.indexed.pop(name, None)

    def pages(self) -> AsyncGenerator[dict[str, Any], None]:
        """Every page of the list (the gateway's one pager: the next page already requested)."""
        return self.gateway.pages(
            self.resource, namespace=self.namespace, label_selector=self.label_selector, limit=self.page_size
        )

    async def listing(self) -> AsyncGenerator[tuple[str, T], None]:
        """``(name, slim object)`` of one list, page by page, in time slices; :attr:`resource_version` is the list's
        once it ends. Nothing is kept (see :meth:`relist`)."""
        version = ""
        async with contextlib.aclosing(self.pages()) as pages:
            async for page in pages:
                for named in await self.slimmed(page.pop("items", None) or []):
                    yield named
                version = str((page.get("metadata") or {}).get("resourceVersion") or version)
        self.resource_version = version

    async def slimmed(self, items: list[dict[str, Any]]) -> list[tuple[str, T]]:
        """``(name, slim(item))`` of a page's items, handing the loop back whenever the slice's budget is spent
        (500 nodes' facts in one go held the loop for tens of milliseconds)."""
        out = []
        for item in items:
            out.append((_name(item), self.slim(item)))
            await self.slices.pause()
        return out

    async def relist(self, *, report: bool = True) -> list[tuple[str, T]]:
        """List the kind again and swap the list in whole; what changed since what the cache held (without
        ``report``: nothing, the list is only swapped in). A continue token that expired reads the list again
        from its start."""
        fresh_lists = 0
        while True:
            objects: dict[str, T] = {}
            indexed: dict[str, tuple[Any, ...]] = {}
            try:
                with collector.paused():
                    async with contextlib.aclosing(self.listing()) as listed:
                        async for name, obj in listed:
                            self.put(name, obj, objects, indexed)
                break
            except ApiError as exc:
                if exc.status != 410 or fresh_lists == EXPIRED_LIST_RETRIES:
                    raise
                fresh_lists += 1
        before, self.objects, self.indexed = self.objects, objects, indexed
        self.last_change = time.monotonic()
        self.lists += 1
        self.listed.set()
        if self.changed is not None:
            self.changed.set()
        return await self.changes(before, objects) if report else []

    async def changes(self, before: dict[str, T], after: dict[str, T]) -> list[tuple[str, T]]:
        """What a reader who held ``before`` must be told to hold ``after`` (in time slices)."""
        left = dict(before)
        changes: list[tuple[str, T]] = []
        for name, obj in after.items():
            old = left.pop(name, None)
            if old is None:
                changes.append(("ADDED", obj))
            elif self.differ(old, obj):
                changes.append(("MODIFIED", obj))
            await self.slices.pause()
        changes.extend(("DELETED", gone) for gone in left.values())
        return changes

    async def events(self) -> AsyncGenerator[tuple[str, T], None]:
        """``(ADDED|MODIFIED|DELETED, slim object)`` from where the cache stands on (a list first unless it has a
        resourceVersion); runs until cancelled, or raises the watch's failure once the reconnect policy gives up.

        A watch that ends or fails is opened again from the last resourceVersion seen (failures wait under
        :data:`~wizard.retry.RECONNECT`, reset by any event, bookmarks included); only a 410, or a list that
        failed, lists again (5,000 pods are 50 pages), and the relist tells what changed meanwhile."""
        async for change in self._follow(report=True):
            yield change

    async def run(self) -> None:
        """:meth:`events` for readers of :attr:`objects` (nothing is reported; a relist only swaps)."""
        async for _ in self._follow(report=False):
            pass

    async def _follow(self, *, report: bool) -> AsyncGenerator[tuple[str, T], None]:
        reconnects = Reconnects(RECONNECT)
        handled = 0
        while True:
            try:
                if not self.resource_version and self.keep:
                    changes = await self.relist(report=report)
                    reconnects.progressed()
                    for change in changes:
                        yield change
                elif not self.resource_version:  # nothing kept: what the list shows is streamed as it comes
                    async with contextlib.aclosing(self.listing()) as listed:
                        async for _, listed_obj in listed:
                            yield "ADDED", listed_obj
                    self.lists += 1
                    reconnects.progressed()
                events = self.gateway.watch_resource(
                    self.resource,
                    self.resource_version,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    timeout_seconds=WATCH_TIMEOUT_S,
                    skip=self.skip,
                )
                async with contextlib.aclosing(events) as stream:
                    async for kind, raw in stream:
                        meta = raw.get("metadata") or {}
                        self.resource_version = str(meta.get("resourceVersion") or self.resource_version)
                        reconnects.progressed()
                        self.trouble = None
                        if kind not in CHANGES:
                            continue  # BOOKMARK: only the resourceVersion moves on
                        name, slim = str(meta.get("name") or ""), self.slim(raw)
                        if self.keep:
                            if kind == "DELETED" or self.objects.get(name) != slim:
                                self.last_change = time.monotonic()
                            if kind == "DELETED":
                                self.drop(name)
                            else:
                                self.put(name, slim)
                        if self.changed is not None:
                            self.changed.set()
                        handled += 1
                        if handled % KEEP_EVERY == 0:
                            collector.keep()
                        if report:
                            yield kind, slim
                        # a burst of buffered events is read without a pause: let the loop breathe
                        await self.slices.pause()
            except Gone:
                self.resource_version = ""  # too old to resume from: list again
            except ClusterError as exc:
                self.trouble = exc
                await reconnects.failed(exc)


async def stop_followers(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel the tasks that keep watch caches current and wait for each to end (a watch's failure, already
    judged by its reader, is not raised again here)."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, ClusterError):
            await task
