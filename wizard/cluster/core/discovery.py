"""Node discovery: every node listed in pages and turned into facts, then followed by the session's watch.

:class:`NodeDirectory` reads the session's one feed of the nodes (:meth:`wizard.cluster.core.caches.Caches.nodes`):
the first :meth:`~NodeDirectory.discover` lists them and starts the session's node watch, which keeps that list
current for every later reader (the Nodes step's table, the host checks, the apply's gate, the rollout, Verify)
instead of listing again. The cache builds the facts in time slices and keeps the collector
out of the way while it lists; a watch that expired (410) is answered by listing again and telling each
follower only what changed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from wizard.cluster.core.caches import Caches
from wizard.cluster.core.rollout_cache import slim_node
from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import ClusterFacts, NodeFacts, node_facts

PAGE_SIZE = 500
"""Nodes per page, as kubectl pages. A page is decoded in one go on the event loop: ~30 ms of CPU for 500 nodes
(250 halved that but cost discovery a tenth more CPU in requests); the next page is read ahead meanwhile."""


@dataclass(frozen=True)
class SessionNode:
    """One node as the session keeps it: its facts (discovery) and what places pods on it (the rollout), so both
    read the one cache."""

    facts: NodeFacts
    scheduling: dict[str, Any]
    """:func:`~wizard.cluster.core.rollout_cache.slim_node`: name, ``nvidia.com/`` and placement labels, taints."""


def session_node(node: dict[str, Any]) -> SessionNode:
    return SessionNode(node_facts(node), slim_node(node))


def _differ(old: SessionNode, new: SessionNode) -> bool:
    """Whether a caller would see a change: NodeFacts' own equality leaves out its labels and annotations (mappings,
    kept out of its hash), and a change of labels alone is one (the 410 relist dropped it: the fault matrix's flake)."""
    a, b = old.facts, new.facts
    return a != b or a.labels != b.labels or a.annotations != b.annotations or old.scheduling != new.scheduling


def node_cache(gateway: Gateway, *, since: str = "") -> WatchCache[SessionNode]:
    """A watch cache of the nodes as the session keeps them (facts and placement fields)."""
    return WatchCache(gateway, "nodes", slim=session_node, differ=_differ, page_size=PAGE_SIZE, since=since)


class NodeDirectory:
    """The nodes of one session as facts: :meth:`discover` reads them, :meth:`watch` follows them."""

    def __init__(self, caches: Caches) -> None:
        self.feed = caches.feed("nodes", slim=session_node, differ=_differ, page_size=PAGE_SIZE)
        self.handed: dict[str, SessionNode] = {}
        """What the last :meth:`discover` (and the watch since) handed out: where the next :meth:`watch` starts."""

    @property
    def resource_version(self) -> str:
        """Of the last complete list (or the last watch event): where a watch starts."""
        return self.feed.cache.resource_version

    @property
    def known(self) -> dict[str, Any]:
        return self.feed.cache.objects

    async def discover(self) -> ClusterFacts:
        """Every node as :mod:`wizard.engine.facts`: listed in pages of :data:`PAGE_SIZE` the first time, then as the
        session's watch keeps them."""
        self.handed = dict(await self.feed.current())
        return ClusterFacts([self.handed[name].facts for name in sorted(self.handed)])  # the server's list order

    async def watch(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on (every node ADDED without one); re-lists
        on 410; runs until cancelled. The session's one node watch serves it (started here if none runs)."""
        async for kind, node in self.feed.follow(self.handed):
            if kind == "DELETED":
                self.handed.pop(node.facts.name, None)
            else:
                self.handed[node.facts.name] = node
            yield kind, node.facts
