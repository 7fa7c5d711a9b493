"""The rollout follower's watch caches, and the slim objects they keep of 5,000 nodes' pods and nodes.

A :class:`Cache` holds the objects of one kind, kept current by one paged list and then a watch from
its resourceVersion (listed again on 410). Each object is cut down as it enters (:func:`slim_pod`,
:func:`slim_node`, :func:`without_managed_fields`) to what :mod:`wizard.cluster.rollout` reads of it,
and the pods that wait for a reason worth showing (:func:`waiting_pods`) are indexed, so a snapshot
reads a few entries instead of every pod. The event loop stays live while thousands of objects come
in: pages are small, and a cache hands the loop back in time slices (:class:`wizard.cluster.slices.Slices`)
while it takes in listed objects and bursts of watch events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wizard import collector
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.cluster.slices import Slices
from wizard.engine.facts import LABEL_UPGRADE_STATE
from wizard.retry import RECONNECT, Reconnects

PROBE_PREFIX = "gpu-wizard-probe-"
KEEP_EVERY = 2000
"""Watch events after which a cache freezes what it keeps (:func:`wizard.collector.keep`)."""
WATCH_TIMEOUT_S = 300
"""How long the server keeps one watch open (``timeoutSeconds``); the cache then watches on from where it was."""
LIST_PAGE = 100
"""Objects per page of a list: a page is decoded in one go on the event loop (500 of the operator's pods took
40-150 ms), so pages are kept small; a rollout lists each kind once."""


@dataclass(frozen=True)
class PodStatus:
    """One operand container that is waiting (image pull, crash loop…)."""

    name: str
    node: str
    phase: str
    reason: str = ""
    message: str = ""
    container: str = ""


def waiting_pods(pod: dict[str, Any]) -> list[PodStatus]:
    """The containers of one pod that wait for a reason worth showing (not the normal start-up)."""
    meta, status = pod["metadata"], pod.get("status") or {}
    if str(meta.get("name") or "").startswith(PROBE_PREFIX):
        return []
    node, phase = str((pod.get("spec") or {}).get("nodeName") or ""), str(status.get("phase") or "")
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason and reason not in ("PodInitializing", "ContainerCreating"):
            out.append(
                PodStatus(
                    meta["name"], node, phase, reason, str(waiting.get("message") or ""), str(cs.get("name") or "")
                )
            )
    return out


def _slim_container_status(cs: dict[str, Any]) -> dict[str, Any]:
    waiting = (cs.get("state") or {}).get("waiting")
    slim: dict[str, Any] = {"name": cs.get("name")}
    if waiting:
        slim["state"] = {"waiting": {"reason": waiting.get("reason"), "message": waiting.get("message")}}
    return slim


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """What :func:`waiting_pods` reads of a pod: its name, node, phase and the waiting containers' reasons."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    slim_status: dict[str, Any] = {"phase": status.get("phase")}
    for key in ("initContainerStatuses", "containerStatuses"):
        if status.get(key):
            slim_status[key] = [_slim_container_status(cs) for cs in status[key]]
    return {
        "metadata": {"name": meta.get("name")},
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
        "status": slim_status,
    }


def slim_node(node: dict[str, Any]) -> dict[str, Any]:
    """What the follower reads of a node: its name and its driver upgrade state label."""
    meta = node.get("metadata") or {}
    labels = meta.get("labels") or {}
    slim_labels = {LABEL_UPGRADE_STATE: labels[LABEL_UPGRADE_STATE]} if LABEL_UPGRADE_STATE in labels else {}
    return {"metadata": {"name": meta.get("name"), "labels": slim_labels}}


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without ``metadata.managedFields`` (kinds with a handful of objects keep the rest)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta.pop("managedFields")
    return obj


def waiting_entries(pod: dict[str, Any]) -> tuple[PodStatus, ...]:
    """:func:`waiting_pods` as a cache index entry."""
    return tuple(waiting_pods(pod))


class Cache:
    """Objects of one kind kept current by one paged list and then a watch (listed again on 410).

    Each object is cut to ``slim(object)`` as it enters, so 5,000 nodes' pods and nodes cost what the
    follower reads of them, not whole objects with their managedFields. ``changed`` is set on every
    event so a follower wakes up only when something happened.
    """

    def __init__(
        self,
        gateway: Gateway,
        resource: str | tuple[str, str, str],
        changed: asyncio.Event,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        slim: Callable[[dict[str, Any]], dict[str, Any]] = without_managed_fields,
        index: Callable[[dict[str, Any]], tuple[Any, ...]] | None = None,
    ) -> None:
        self.gateway = gateway
        self.slim = slim
        self.index = index
        self.indexed: dict[str, tuple[Any, ...]] = {}
        """Name -> ``index(object)`` for the objects where it is not empty, kept as objects come and go (so a
        snapshot reads the few pods that wait instead of scanning every pod of 5,000 nodes)."""
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.changed = changed
        self.objects: dict[str, dict[str, Any]] = {}
        self.listed = asyncio.Event()
        self.lists = 0
        """How many times the kind was listed (1 unless watches expired)."""
        self.slices = Slices()
        """The cache's own time slices: the five caches' slices may run back to back in one loop iteration when
        all their watches have data, so each is short (a count of 100 events each made iterations of 150-300 ms
        at 5,000 nodes)."""

    def items(self) -> list[dict[str, Any]]:
        return [self.objects[name] for name in sorted(self.objects)]

    def indexed_items(self) -> list[Any]:
        """The ``index`` entries of every object, in name order."""
        return [entry for name in sorted(self.indexed) for entry in self.indexed[name]]

    def _put(self, name: str, obj: dict[str, Any], objects: dict[str, Any], indexed: dict[str, Any]) -> None:
        objects[name] = obj
        entries = self.index(obj) if self.index is not None else ()
        if entries:
            indexed[name] = entries
        else:
            indexed.pop(name, None)

    def _drop(self, name: str) -> None:
        self.objects.pop(name, None)
        self.indexed.pop(name, None)

    async def _list(self) -> str:
        # built aside and swapped in whole: a snapshot between two pages must not see half a list
        objects: dict[str, dict[str, Any]] = {}
        indexed: dict[str, tuple[Any, ...]] = {}
        with collector.paused():
            rv = await self._pages(objects, indexed)
        self.objects, self.indexed = objects, indexed
        self.lists += 1
        self.listed.set()
        self.changed.set()
        return rv

    async def _pages(self, objects: dict[str, Any], indexed: dict[str, Any]) -> str:
        """Every page of the list into ``objects`` and ``indexed``: the list's resourceVersion."""
        rv, cont = "", None
        while True:
            page = await self.gateway.list_page(
                self.resource, namespace=self.namespace, label_selector=self.label_selector, limit=LIST_PAGE, cont=cont
            )
            for item in page.pop("items", None) or []:
                self._put(str(item["metadata"]["name"]), self.slim(item), objects, indexed)
                await self.slices.pause()
            meta = page.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or rv)
            cont = meta.get("continue") or None
            if not cont:
                return rv

    async def run(self) -> None:
        """List, then follow the watch; runs until cancelled. A watch that ends or fails is opened again from
        the last resourceVersion seen (failures wait under :data:`~wizard.retry.RECONNECT`, reset by any
        event); only a 410, or a list that failed, lists again (5,000 pods are 50 pages)."""
        reconnects = Reconnects(RECONNECT)
        handled = 0
        rv = ""
        while True:
            try:
                if not rv:
                    rv = await self._list()
                events = self.gateway.watch_resource(
                    self.resource,
                    rv,
                    namespace=self.namespace,
                    label_selector=self.label_selector,
                    timeout_seconds=WATCH_TIMEOUT_S,
                )
                async with contextlib.aclosing(events) as stream:
                    async for kind, obj in stream:
                        meta = obj.get("metadata") or {}
                        rv = str(meta.get("resourceVersion") or rv)
                        if kind == "DELETED":
                            self._drop(str(meta.get("name")))
                        elif kind in ("ADDED", "MODIFIED"):
                            self._put(str(meta.get("name")), self.slim(obj), self.objects, self.indexed)
                        else:
                            continue  # BOOKMARK: only the resourceVersion moves on
                        self.changed.set()
                        reconnects.progressed()
                        handled += 1
                        if handled % KEEP_EVERY == 0:
                            collector.keep()
                        # a burst of buffered events is read without a pause: let the loop breathe
                        await self.slices.pause()
            except Gone:
                rv = ""  # too old to resume from: list again
            except ClusterError as exc:
                await reconnects.failed(exc)
