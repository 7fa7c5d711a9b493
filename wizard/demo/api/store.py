"""The demo cluster's object store: what etcd plus the watch cache are to a real API server.

Stored objects are never mutated in place (a write stores a fresh dict), so watch events and the HTTP layer
share references; ``list``/``get`` hand the simulation deep copies.
"""

from __future__ import annotations

import builtins
import copy
import datetime as dt
import json
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Key = tuple[str, str]
"""``(namespace or "", name)``."""

_NAME_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


KEPT_SNAPSHOTS = 16
"""Paged lists whose snapshot is kept between pages (the oldest goes first)."""


class StoreConflict(Exception):
    """The object already exists (create) or its resourceVersion is stale (update)."""


class StoreNotFound(LookupError):
    """The object to update does not exist."""


class StoreGone(Exception):
    """The requested resourceVersion is older than the retained watch history."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change: ``type`` is ADDED, MODIFIED or DELETED; ``obj`` and ``old`` must not be mutated."""

    rv: int
    resource: str
    type: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    at: float


Listener = Callable[[WatchEvent], None]


def clone(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), several times faster than ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clone(item) for item in value]
    return copy.deepcopy(value) if not isinstance(value, (str, int, float, bool, type(None), tuple)) else value


def now_rfc3339() -> str:
    """The current UTC time the way Kubernetes writes timestamps (second precision, ``Z``)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_key(obj: dict[str, Any]) -> Key:
    """The store key of an object from its metadata."""
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _without_volatile(obj: dict[str, Any]) -> dict[str, Any]:
    """The object minus fields that every write changes, to detect no-op writes."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("resourceVersion", None)
    meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _compact(value: Any) -> bytes:
    """``json.dumps(value, separators=(",", ":"))`` as bytes, without building an encoder per call."""
    return _ENCODER.encode(value).encode()


def _member(key: str, value: Any, spec: dict[str, Any], spec_data: bytes) -> bytes:
    return _compact(key) + b":" + (spec_data if value is spec else _compact(value))


class Store:
    """In-memory objects keyed by resource plural; every write bumps a global resourceVersion and emits a watch event."""

    def __init__(self, history_size: int = 100_000) -> None:
        self._lock = threading.RLock()
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {}
        self._sorted: dict[str, list[Key]] = {}
        self._sorted_stale: dict[str, set[Key]] = {}
        """Keys created or deleted since a resource's sorted keys were last worked out (see :meth:`keys`)."""
        self._encoded: dict[str, dict[Key, tuple[str, bytes, dict[str, Any] | None, bytes]]] = {}
        """resource -> key -> (resourceVersion, its JSON, its spec, the spec's JSON)."""
        self._rv = 1
        self._history: deque[WatchEvent] = deque(maxlen=history_size)
        self._compacted_rv = 0
        self._snapshots: dict[tuple[str, int], tuple[dict[Key, dict[str, Any] | None], int]] = {}
        """(resource, list resourceVersion) -> (changed keys as they were then, history folded in up to)."""
        self._listeners: list[Listener] = []
        self._rand = random.Random()
        self._owned: dict[str, set[tuple[str, Key]]] = {}
        """Owner uid -> (resource, key) of the objects whose ownerReferences name it (the GC's lookup)."""

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Deep copies of every object of a resource, optionally in one namespace, in key order."""
        with self._lock:
            return [clone(obj) for obj in self.iter_objects(resource, namespace)]

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """A deep copy of one object, or None."""
        with self._lock:
            obj = self._objects.get(resource, {}).get((namespace or "", name))
            return clone(obj) if obj is not None else None

    def create(self, resource: str, obj: dict[str, Any], *, adopt: bool = False) -> dict[str, Any]:
        """Store a new object; fills uid, creationTimestamp, resourceVersion, generation=1.

        Raises StoreConflict if the key exists; ``generateName`` and ``adopt`` work as on :meth:`update`.
        """
        new = {**obj, "metadata": dict(obj.get("metadata") or {})} if adopt else clone(obj)
        meta = new.setdefault("metadata", {})
        with self._lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(self._rand.choices(_NAME_SUFFIX_CHARS, k=5))
            key = object_key(new)
            bucket = self._objects.setdefault(resource, {})
            if key in bucket:
                raise StoreConflict(f"{resource} {key[1]!r} already exists")
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
            meta["generation"] = 1
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            bucket[key] = new
            self._index_owners(resource, key, new, None)
            self._key_moved(resource, key)
            self._emit(resource, "ADDED", new, None)
            return new if adopt else clone(new)

    def update(
        self, resource: str, obj: dict[str, Any], *, expect_rv: str | None = None, adopt: bool = False
    ) -> dict[str, Any]:
        """Replace an object; bumps resourceVersion, generation+1 when spec changed, MODIFIED event.

        Raises StoreConflict on a stale ``expect_rv``, StoreNotFound when it is gone; an identical write is a no-op.
        ``adopt``: the caller never mutates ``obj`` again, so it is stored without a deep copy and returned
        read-only (the kubelet writes every pod status so: deep copies were most of the CPU at 1,000 nodes).
        """
        new = {**obj, "metadata": dict(obj.get("metadata") or {})} if adopt else clone(obj)
        meta = new.setdefault("metadata", {})
        key = object_key(new)
        with self._lock:
            old = self._objects.get(resource, {}).get(key)
            if old is None:
                raise StoreNotFound(f"{resource} {key[1]!r} not found")
            old_meta = old["metadata"]
            if expect_rv and expect_rv != old_meta["resourceVersion"]:
                raise StoreConflict(
                    f"the object has been modified; please apply your changes to the latest version "
                    f"and try again (resourceVersion {expect_rv} is not {old_meta['resourceVersion']})"
                )
            for fixed in ("uid", "creationTimestamp"):
                meta[fixed] = old_meta.get(fixed)
            changed_spec = {k: v for k, v in new.items() if k not in ("metadata", "status")} != {
                k: v for k, v in old.items() if k not in ("metadata", "status")
            }
            meta["generation"] = old_meta.get("generation", 1) + (1 if changed_spec else 0)
            meta["resourceVersion"] = old_meta["resourceVersion"]
            if "managedFields" not in meta and "managedFields" in old_meta:
                meta["managedFields"] = old_meta["managedFields"]
            if _without_volatile(new) == _without_volatile(old) and meta.get("managedFields") == old_meta.get(
                "managedFields"
            ):
                return old if adopt else clone(old)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            self._objects[resource][key] = new
            self._index_owners(resource, key, new, old)
            encoded = self._encoded.get(resource, {})
            if key in encoded:  # the old version's JSON goes; its spec's stays for the next one (see encoded)
                encoded[key] = ("", b"", *encoded[key][2:])
            self._emit(resource, "MODIFIED", new, old)
            return new if adopt else clone(new)

    def delete(
        self, resource: str, name: str, namespace: str | None = None, *, copy: bool = True
    ) -> dict[str, Any] | None:
        """Remove an object; returns it (with the deletion's resourceVersion) or None. DELETED event.

        ``copy=False``: the object returned is the DELETED event's own, read-only."""
        key = (namespace or "", name)
        with self._lock:
            old = self._objects.get(resource, {}).pop(key, None)
            if old is None:
                return None
            self._index_owners(resource, key, None, old)
            self._key_moved(resource, key)
            self._encoded.get(resource, {}).pop(key, None)
            self._rv += 1
            gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self._rv)}}
            self._emit(resource, "DELETED", gone, old)
            return clone(gone) if copy else gone

    def dependents(self, uid: str) -> builtins.list[tuple[str, dict[str, Any]]]:
        """(resource, stored object) of every object with an ownerReference to ``uid``; do not mutate."""
        with self._lock:
            return [
                (resource, self._objects[resource][key])
                for resource, key in sorted(self._owned.get(uid, ()))
                if key in self._objects.get(resource, {})
            ]

    def _index_owners(self, resource: str, key: Key, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        if (
            new is not None
            and old is not None
            and new["metadata"].get("ownerReferences") is old["metadata"].get("ownerReferences")
        ):
            return  # the same owners (a status write keeps the metadata's parts): nothing to re-index
        for obj, add in ((old, False), (new, True)):
            for ref in ((obj or {}).get("metadata") or {}).get("ownerReferences") or []:
                uid = ref.get("uid") if isinstance(ref, dict) else None
                if not isinstance(uid, str):
                    continue
                if add:
                    self._owned.setdefault(uid, set()).add((resource, key))
                elif uid in self._owned:
                    self._owned[uid].discard((resource, key))
                    if not self._owned[uid]:
                        del self._owned[uid]

    @property
    def lock(self) -> threading.RLock:
        """The store's lock, to read several things consistently."""
        return self._lock

    @property
    def resource_version(self) -> int:
        return self._rv

    def resources(self) -> builtins.list[str]:
        with self._lock:
            return list(self._objects)

    def lookup(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The stored object itself (do not mutate), or None."""
        return self._objects.get(resource, {}).get((namespace or "", name))

    def _key_moved(self, resource: str, key: Key) -> None:
        if resource in self._sorted:
            self._sorted_stale.setdefault(resource, set()).add(key)

    def keys(self, resource: str) -> builtins.list[Key]:
        """The sorted keys of a resource: a new list after creates or deletes (one handed out is never changed)."""
        with self._lock:
            keys = self._sorted.get(resource)
            stale = self._sorted_stale.pop(resource, None)
            bucket = self._objects.get(resource, {})
            if keys is None:
                keys = self._sorted[resource] = sorted(bucket)
            elif stale:
                keys = self._sorted[resource] = sorted(
                    [k for k in keys if k not in stale] + [k for k in stale if k in bucket]
                )
            return keys

    def iter_objects(self, resource: str, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """The stored objects (do not mutate) in key order, optionally in one namespace."""
        bucket = self._objects.get(resource, {})
        for key in self.keys(resource):
            if namespace is None or key[0] == namespace:
                obj = bucket.get(key)
                if obj is not None:
                    yield obj

    def encoded(self, resource: str, obj: dict[str, Any], type_meta: tuple[str, str] | None = None) -> bytes:
        """The compact JSON of a stored object, serialised once per resourceVersion."""
        key = object_key(obj)
        rv = obj["metadata"].get("resourceVersion", "")
        cache = self._encoded.setdefault(resource, {})
        hit = cache.get(key)
        if hit is not None and hit[0] == rv:
            return hit[1]
        shown = obj
        if type_meta is not None and not obj.get("kind"):
            shown = {"apiVersion": type_meta[0], "kind": type_meta[1], **obj}
        spec = obj.get("spec")
        if isinstance(spec, dict) and len(shown) > 1:
            # A status write keeps the spec object (stored objects are never mutated): its JSON, most of a
            # pod's (a probe pod's script), is reused from the version before; byte for byte what one
            # json.dumps of the whole object gives, the keys in the same order.
            spec_data = hit[3] if hit is not None and hit[2] is spec else _compact(spec)
            data = b"{" + b",".join(_member(k, v, spec, spec_data) for k, v in shown.items()) + b"}"
        else:
            spec, spec_data = None, b""
            data = _compact(shown)
        if self._objects.get(resource, {}).get(key) is obj:
            cache[key] = (rv, data, spec, spec_data)
        return data

    def subscribe(
        self, listener: Listener, since: int | None = None
    ) -> tuple[builtins.list[WatchEvent], Callable[[], None]]:
        """Register a listener (called in the writer's thread, under the store lock).

        Returns, atomically, the retained events newer than ``since`` and an unsubscribe function;
        raises StoreGone when ``since`` is older than the retained history.
        """
        with self._lock:
            backlog: builtins.list[WatchEvent] = []
            if since is not None:
                if since < self._compacted_rv:
                    raise StoreGone(f"too old resource version: {since} ({self._compacted_rv})")
                # From the newest back (the history is in revision order): a watch from a recent
                # revision costs what it replays, not the whole retained history.
                for event in reversed(self._history):
                    if event.rv <= since:
                        break
                    backlog.append(event)
                backlog.reverse()
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return backlog, unsubscribe

    def as_of(self, resource: str, rv: int) -> dict[Key, dict[str, Any] | None]:
        """What changed in ``resource`` after ``rv``: each such key's object as it was then (None: absent).

        Every page of a paged list is served from this snapshot; raises StoreGone when ``rv`` is too old."""
        with self._lock:
            if rv < self._compacted_rv:
                raise StoreGone(f"too old resource version: {rv} ({self._compacted_rv})")
            then, scanned = self._snapshots.pop((resource, rv), ({}, rv))
            newer: list[WatchEvent] = []
            for event in reversed(self._history):
                if event.rv <= scanned:
                    break
                if event.resource == resource:
                    newer.append(event)
            for event in reversed(newer):  # oldest first: the first change after rv tells the state at rv
                then.setdefault(object_key(event.obj), event.old)
            self._snapshots[(resource, rv)] = (then, max(scanned, self._rv))
            while len(self._snapshots) > KEPT_SNAPSHOTS:
                del self._snapshots[next(iter(self._snapshots))]
            return then

    def list_done(self, resource: str, rv: int) -> None:
        """The last page of the list at ``rv`` was served: its snapshot is not needed any more."""
        with self._lock:
            self._snapshots.pop((resource, rv), None)

    def compact(self) -> None:
        """Forget the watch history (as etcd compaction does): older versions now answer Gone."""
        with self._lock:
            self._history.clear()
            self._compacted_rv = self._rv
            self._snapshots.clear()

    def _emit(self, resource: str, kind: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        if self._history.maxlen is not None and len(self._history) == self._history.maxlen:
            self._compacted_rv = self._history[0].rv
        event = WatchEvent(self._rv, resource, kind, obj, old, time.monotonic())
        self._history.append(event)
        for listener in list(self._listeners):
            listener(event)
