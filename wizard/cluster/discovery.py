"""Node discovery: every node listed in pages and turned into facts, then followed by a watch.

:class:`NodeDirectory` is the one watch cache (:class:`wizard.cluster.watchcache.WatchCache`) of the nodes
as :mod:`wizard.engine.facts`: it remembers the list's resourceVersion and the facts it handed out, so the
watch starts where discovery ended and a watch that expired (410) is answered by listing again and telling
the caller only what changed. The cache builds the facts in time slices and keeps the collector out of
the way while it lists.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from wizard.cluster.gateway import Gateway
from wizard.cluster.watchcache import WatchCache
from wizard.engine.facts import ClusterFacts, NodeFacts, node_facts

PAGE_SIZE = 500
"""Nodes per page, as kubectl pages. A page is decoded in one go on the event loop: ~30 ms of CPU for 500 nodes
(250 halved that but cost discovery a tenth more CPU in requests); the next page is read ahead meanwhile."""


def _differ(old: NodeFacts, new: NodeFacts) -> bool:
    """Whether a caller would see a change: NodeFacts' own equality leaves out its labels and annotations (mappings,
    kept out of its hash), and a change of labels alone is one (the 410 relist dropped it: the fault matrix's flake)."""
    return old != new or old.labels != new.labels or old.annotations != new.annotations


def node_cache(gateway: Gateway, *, since: str = "") -> WatchCache[NodeFacts]:
    """A watch cache of the nodes as facts."""
    return WatchCache(gateway, "nodes", slim=node_facts, differ=_differ, page_size=PAGE_SIZE, since=since)


class NodeDirectory:
    """The nodes of one cluster as facts: :meth:`discover` lists them, :meth:`watch` follows them."""

    def __init__(self, gateway: Gateway) -> None:
        self.cache = node_cache(gateway)

    @property
    def resource_version(self) -> str:
        """Of the last complete list (or the last watch event): where :meth:`watch` starts."""
        return self.cache.resource_version

    @property
    def known(self) -> dict[str, NodeFacts]:
        return self.cache.objects

    async def discover(self) -> ClusterFacts:
        """Every node, listed in pages of :data:`PAGE_SIZE`, as :mod:`wizard.engine.facts`."""
        await self.cache.relist(report=False)
        return ClusterFacts(list(self.cache.objects.values()))

    async def watch(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on; re-lists on 410; runs until cancelled.

        The watch keeps its own place (a cache of its own, from the directory's resourceVersion and facts): a
        :meth:`discover` by someone else meanwhile must not move it past changes this caller has not been told
        of. It writes what it learns back to the directory, where the next watch starts."""
        if not self.resource_version:
            for facts in (await self.discover()).nodes:
                yield "ADDED", facts
        own = node_cache(self.cache.gateway, since=self.resource_version)
        own.objects = dict(self.known)
        async for kind, facts in own.events():
            self.cache.resource_version = own.resource_version
            if kind == "DELETED":
                self.cache.drop(facts.name)
            else:
                self.cache.put(facts.name, facts)
            yield kind, facts
