"""Node discovery: every node listed in pages and turned into facts, then followed by a watch.

:class:`NodeDirectory` remembers the list's resourceVersion and the facts it handed out, so the watch
starts where discovery ended and a watch that expired (410) is answered by listing again and telling
the caller only what changed. The facts of a page are built in slices of :data:`FACTS_PER_SLICE`
nodes with a yield between them: 500 nodes' facts in one go held the event loop (the TUI's) for tens
of milliseconds per page; the collector stays out of the way meanwhile (:func:`wizard.collector.bulk`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from wizard import collector
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.engine.facts import ClusterFacts, NodeFacts, node_facts
from wizard.retry import Reconnects

PAGE_SIZE = 500
"""Nodes per page, as kubectl pages. A page is decoded in one go on the event loop: ~30 ms of CPU for 500 nodes
(250 halved that but cost discovery a tenth more CPU in requests); the next page is read ahead meanwhile."""
FACTS_PER_SLICE = 100
"""Nodes turned into facts before discovery yields to the event loop."""


async def facts_in_slices(items: list[dict[str, Any]], size: int = FACTS_PER_SLICE) -> list[NodeFacts]:
    """:func:`node_facts` of every item, yielding to the event loop between slices of ``size``."""
    out: list[NodeFacts] = []
    for start in range(0, len(items), size):
        if start:
            await asyncio.sleep(0)
        out.extend(node_facts(item) for item in items[start : start + size])
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
        nodes: list[NodeFacts] = []
        with collector.bulk():
            async with contextlib.aclosing(self.gateway.node_pages(limit=PAGE_SIZE)) as pages:
                async for page in pages:
                    nodes.extend(await facts_in_slices(page.get("items") or []))
                    meta = page.get("metadata") or {}
                    if not meta.get("continue"):
                        self.resource_version = str(meta.get("resourceVersion") or "")
        self.known = {n.name: n for n in nodes}
        return ClusterFacts(nodes)

    async def watch(self) -> AsyncGenerator[tuple[str, NodeFacts], None]:
        """``(ADDED|MODIFIED|DELETED, facts)`` from the last :meth:`discover` on; re-lists on 410; runs until cancelled."""
        if not self.resource_version:
            for facts in (await self.discover()).nodes:
                yield "ADDED", facts
        reconnects = Reconnects()
        while True:
            try:
                async with contextlib.aclosing(self.gateway.watch_nodes(self.resource_version)) as events:
                    async for kind, obj in events:
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
                        self.resource_version = rv or self.resource_version
                        if kind not in ("ADDED", "MODIFIED", "DELETED"):
                            continue
                        facts = node_facts(obj)
                        if kind == "DELETED":
                            self.known.pop(facts.name, None)
                        else:
                            self.known[facts.name] = facts
                        reconnects.progressed()
                        yield kind, facts
            except Gone:
                before = dict(self.known)
                for facts in (await self.discover()).nodes:
                    old = before.pop(facts.name, None)
                    if old is None:
                        yield "ADDED", facts
                    elif old != facts:
                        yield "MODIFIED", facts
                for gone in before.values():
                    yield "DELETED", gone
            except ClusterError as exc:
                await reconnects.failed(exc)
