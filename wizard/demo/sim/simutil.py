"""Small helpers shared by the simulated controllers: writes that skip no-ops, conditions, ownership."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import pickle
import time
from typing import Any

from wizard.demo.api.store import Store, StoreConflict, StoreNotFound

#: Characters Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


_stamp: tuple[int, str] = (-1, "")
"""The last second formatted (the kubelet stamps several conditions per pod step)."""


def now() -> str:
    """The current UTC time in Kubernetes' RFC 3339 form."""
    global _stamp
    second = int(time.time())
    if _stamp[0] != second:
        _stamp = (second, dt.datetime.fromtimestamp(second, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp[1]


def stable_suffix(text: str, length: int = 5) -> str:
    """A deterministic name suffix from ``text``, in Kubernetes' alphabet."""
    digest = hashlib.sha256(text.encode()).digest()
    return "".join(SUFFIX_CHARS[b % len(SUFFIX_CHARS)] for b in digest[:length])


def template_hash(template: dict[str, Any]) -> str:
    """A ``controller-revision-hash`` for a pod template (stable across runs)."""
    return stable_suffix(json.dumps(template, sort_keys=True), 10)


TICK_SLICE_S = 0.001
"""How long a tick works before it hands the event loop back to the API server (see :class:`Pacer`)."""


class Pacer:
    """Lets the API server answer during a long tick (they share one event loop; real kubelets never stall it).

    A tick asks :meth:`due` between pods and awaits :meth:`pause`; what it read before may have changed after.
    """

    def __init__(self) -> None:
        self.until = time.monotonic() + TICK_SLICE_S

    def due(self) -> bool:
        return time.monotonic() >= self.until

    async def pause(self) -> None:
        await asyncio.sleep(0)
        self.until = time.monotonic() + TICK_SLICE_S


def read(store: Store, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The stored objects themselves (no copies, for speed at 5,000 nodes): never mutate them, ``thaw`` first."""
    return list(store.iter_objects(resource, namespace))


def thaw(obj: dict[str, Any]) -> dict[str, Any]:
    """A private, mutable copy of a stored object (pickle of our own JSON-like data: ~5× faster than deepcopy)."""
    copied: dict[str, Any] = pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
    return copied


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    """``metadata.labels`` (created when missing, so callers may assign into it)."""
    return obj.setdefault("metadata", {}).setdefault("labels", {})


def is_owned_by(obj: dict[str, Any], uid: str) -> bool:
    """Whether one of the object's ownerReferences points at ``uid``."""
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


def controller_uid(obj: dict[str, Any]) -> str:
    """The uid of the object's controlling owner, or ""."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


def set_condition(conditions: list[dict[str, Any]], kind: str, status: str, reason: str, message: str = "") -> None:
    """``meta.SetStatusCondition``: replace by type; the transition time moves only when status flips."""
    for cond in conditions:
        if cond.get("type") == kind:
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now()
            cond.update({"status": status, "reason": reason, "message": message})
            return
    conditions.append(
        {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now()}
    )


class Writer:
    """Store writes of one tick: skips no-ops and remembers whether anything changed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.changed = False

    def update(self, resource: str, obj: dict[str, Any], *, adopt: bool = False) -> dict[str, Any] | None:
        """Replace ``obj`` unless the stored version is identical; None when it vanished or conflicted.

        ``adopt``: as for :meth:`Store.update`; the stored object is returned read-only."""
        meta = obj.get("metadata") or {}
        current = self.store.lookup(resource, meta.get("name", ""), meta.get("namespace"))
        if current is None:
            return None
        if _same(current, obj):
            return current if adopt else thaw(current)
        try:
            stored = self.store.update(
                resource,
                {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}},
                adopt=adopt,
            )
        except (StoreConflict, StoreNotFound):
            self.changed = True  # someone else wrote; look again next tick
            return None
        self.changed = True
        return stored

    def create(self, resource: str, obj: dict[str, Any], *, adopt: bool = False) -> dict[str, Any] | None:
        """Create ``obj``; None when an object of that name already exists (``adopt``: see :meth:`Store.create`)."""
        try:
            stored = self.store.create(resource, obj, adopt=adopt)
        except StoreConflict:
            return None
        self.changed = True
        return stored

    def delete(self, resource: str, name: str, namespace: str | None = None) -> None:
        if self.store.delete(resource, name, namespace, copy=False) is not None:
            self.changed = True


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal apart from the fields the store maintains."""

    def strip(obj: dict[str, Any]) -> dict[str, Any]:
        meta = {
            k: v
            for k, v in (obj.get("metadata") or {}).items()
            if k not in ("resourceVersion", "generation", "managedFields")
        }
        return {**obj, "metadata": meta}

    return strip(a) == strip(b)
