"""Node discovery: every node listed in pages and turned into facts, then followed by a watch.

:class:`NodeDirectory` remembers the list's resourceVersion and the facts it handed out, so the watch
starts where discovery ended and a watch that expired (410) is answered by listing again and telling
the caller only what changed. The facts of a page are built in time slices
(:class:`wizard.cluster.slices.Slices`) that hand the loop back: 500 nodes' facts in one go held the
event loop (the TUI's) for tens of milliseconds per page; the collector stays out of the way meanwhile
(:func:`wizard.collector.paused`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from wizard import collector
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.cluster.slices import Slices
from wizard.engine.facts import ClusterFacts, NodeFacts, node_facts
from wizard.retry import Reconnects

EXPIRED_LIST_RETRIES = 2
"""Fresh lists after a continue token expired mid-list (each of 5,000 nodes takes about a second)."""

PAGE_SIZE = 500
"""Nodes per page, as kubectl pages. A page is decoded in one go on the event loop: ~30 ms of CPU for 500 nodes
(250 halved that but cost discovery a tenth more CPU in requests); the next page is read ahead meanwhile."""


async def facts_in_slices(items: list[dict[str, Any]], slices: Slices | None = None) -> list[NodeFacts]:
    """:func:`node_facts` of every item, handing the event loop back whenever ``slices``' budget is spent."""
    slices = slices or Slices()
    out: list[NodeFacts] = []
    for item in items:
        out.append(node_facts(item))
        await slices.pause()
    return out


class NodeDirectory:
    """The nodes of one cluster as facts: :meth:`discover` lists them, :meth:`watch` follows them."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.resource_version = ""
        """Of the last complete list (or the last watch event): where :meth:`watch` starts."""
        self.known: dict[str, NodeFacts] = {}

    async def discover(self) -> ClusterFacts:
        """Every node, listed in pages of :data:`PAGE_SIZE`, as :mod:`wizard.engine.facts`."""
        nodes, self.resource_version = await self._list()
        self.known = {n.name: n for n in nodes}
        return ClusterFacts(nodes)

    async def _list(self) -> tuple[list[NodeFacts], str]:
        """Every node's facts and the list's resourceVersion.

        A list whose pages took longer than the server keeps its first page's revision (a continue token
        answered 410 Expired: etcd compacted it) is read again from its first page, as client-go's pager
        does: the pages read so far are of an older snapshot than the rest would be."""
        fresh_lists = 0
        while True:
            try:
                return await self._list_pages()
            except ApiError as exc:
                if exc.status != 410 or fresh_lists == EXPIRED_LIST_RETRIES:
                    raise
                fresh_lists += 1

    async def _list_pages(self) -> tuple[list[NodeFacts], str]:
        nodes: list[NodeFacts] = []
        version = ""
        slices = Slices()
        with collector.paused():
            async with contextlib.aclosing(self.gateway.node_pages(limit=PAGE_SIZE)) as pages:
                async for page in pages:
                    nodes.extend(await facts_in_slices(page.get("items") or [], slices))
                    meta = page.get("metadata") or {}
                    if not meta.get("continue"):
                        version = str(meta.get("resourceVersion") or "")
        return nodes, version

    async def watch(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on; re-lists on 410; runs until cancelled.

        The watch keeps its own place (resourceVersion and the facts it told of): a :meth:`discover` by
        someone else meanwhile must not move it past changes this caller has not been told of. It writes what
        it learns back to the directory (its latest resourceVersion and facts), where the next watch starts."""
        if not self.resource_version:
            for facts in (await self.discover()).nodes:
                yield "ADDED", facts
        version, told = self.resource_version, dict(self.known)
        reconnects = Reconnects()
        relist = False
        while True:
            try:
                if relist:
                    # Nothing was watching since the 410: what changed meanwhile is told by comparing.
                    nodes, version = await self._list()
                    relist = False
                    reconnects.progressed()
                    changes = _changes(told, nodes)
                    told = {n.name: n for n in nodes}
                    self.resource_version, self.known = version, dict(told)
                    for kind, facts in changes:
                        yield kind, facts
                async with contextlib.aclosing(self.gateway.watch_nodes(version)) as events:
                    async for kind, obj in events:
                        version = str((obj.get("metadata") or {}).get("resourceVersion") or "") or version
                        self.resource_version = version
                        if kind not in ("ADDED", "MODIFIED", "DELETED"):
                            continue
                        facts = node_facts(obj)
                        for place in (told, self.known):  # its own place, and the directory's latest
                            if kind == "DELETED":
                                place.pop(facts.name, None)
                            else:
                                place[facts.name] = facts
                        reconnects.progressed()
                        yield kind, facts
            except Gone:
                relist = True
            except ClusterError as exc:  # the watch or the relist: tried again under the reconnect policy
                await reconnects.failed(exc)


def _changes(told: dict[str, NodeFacts], nodes: list[NodeFacts]) -> list[tuple[str, NodeFacts]]:
    """What a relist shows changed since the facts ``told``: ADDED, MODIFIED and DELETED events."""
    before = dict(told)
    changes: list[tuple[str, NodeFacts]] = []
    for facts in nodes:
        old = before.pop(facts.name, None)
        if old is None:
            changes.append(("ADDED", facts))
        elif _differ(old, facts):
            changes.append(("MODIFIED", facts))
    changes.extend(("DELETED", gone) for gone in before.values())
    return changes


def _differ(old: NodeFacts, new: NodeFacts) -> bool:
    """Whether a caller would see a change: NodeFacts' own equality leaves out its labels and annotations (mappings,
    kept out of its hash), and a change of labels alone is one (the 410 relist dropped it: the fault matrix's flake)."""
    return old != new or old.labels != new.labels or old.annotations != new.annotations
