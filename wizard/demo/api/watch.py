"""Watch streams: newline-delimited JSON events over a chunked response, as ``?watch=true`` returns them."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from wizard.demo.api import tables
from wizard.demo.api.kinds import ResourceType
from wizard.demo.api.selectors import Matcher
from wizard.demo.api.status import status_body
from wizard.demo.api.store import Store, StoreGone, WatchEvent

DEFAULT_TIMEOUT_S = 1800.0
"""What a real API server picks (min-request-timeout) when the client gives no timeoutSeconds."""


def gone_event(message: str) -> bytes:
    """The ERROR event telling a watcher its version is too old (410 Expired)."""
    return _line({"type": "ERROR", "object": status_body(410, message, reason="Expired")})


def _line(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


class WatchHub:
    """Tracks open watches so the server can end them all at shutdown."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        self.loop_thread = threading.get_ident()
        self.closing = asyncio.Event()

    def listener(self, queue: asyncio.Queue[WatchEvent]) -> Callable[[WatchEvent], None]:
        """A store listener that hands events to ``queue`` on the server's loop, from any thread."""

        def push(event: WatchEvent) -> None:
            if threading.get_ident() == self.loop_thread:
                queue.put_nowait(event)
            else:
                self.loop.call_soon_threadsafe(queue.put_nowait, event)

        return push


def _transition(event: WatchEvent, matcher: Matcher | None) -> str | None:
    if matcher is None:
        return event.type
    now = matcher(event.obj)
    if event.type == "MODIFIED":
        before = event.old is not None and matcher(event.old)
        if now and before:
            return "MODIFIED"
        if now:
            return "ADDED"
        return "DELETED" if before else None
    return event.type if now else None


#: Events written at once at most (those already queued when the stream gets to them).
_BATCH = 256


async def serve_watch(
    request: web.Request,
    hub: WatchHub,
    rtype: ResourceType,
    namespace: str | None,
    matcher: Matcher | None,
    expiry_s: float,
    expire: Callable[[], bool] = lambda: True,
) -> web.StreamResponse:
    """Stream watch events of one resource until the timeout, a disconnect or shutdown."""
    query = request.query
    rv_text = query.get("resourceVersion", "")
    timeout = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT_S)
    as_table = tables.wants_table(request.headers.get("Accept", ""))
    include = query.get("includeObject", "Metadata")
    bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
    send_initial = query.get("sendInitialEvents") == "true" or rv_text in ("", "0")
    queue: asyncio.Queue[WatchEvent] = asyncio.Queue()
    store = hub.store
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache"})
    resp.enable_chunked_encoding()
    gone: str | None = None
    initial: list[dict[str, Any]] = []
    backlog: list[WatchEvent] = []
    unsubscribe: Callable[[], None] = lambda: None  # noqa: E731
    with store.lock:
        try:
            since = None if rv_text in ("", "0") else int(rv_text)
            if send_initial:
                initial = [o for o in store.iter_objects(rtype.plural, namespace) if matcher is None or matcher(o)]
                since = None
            backlog, unsubscribe = store.subscribe(hub.listener(queue), since)
        except StoreGone as exc:
            gone = str(exc)
        except ValueError:
            gone = f"invalid resource version: {rv_text!r}"
        last_rv = str(store.resource_version)
    await resp.prepare(request)
    if gone is not None:
        await resp.write(gone_event(gone))
        await resp.write_eof()
        return resp
    first = True

    def encode(kind: str, obj: dict[str, Any]) -> bytes:
        nonlocal first
        if as_table:
            payload: Any = tables.table(
                rtype, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")}, include, first
            )
            first = False
            return _line({"type": kind, "object": payload})
        return (
            b'{"type":"'
            + kind.encode()
            + b'","object":'
            + store.encoded(rtype.plural, obj, (rtype.api_version, rtype.kind))
            + b"}\n"
        )

    started = time.monotonic()
    deadline = started + timeout
    try:
        for obj in initial:
            await resp.write(encode("ADDED", obj))
        if query.get("sendInitialEvents") == "true":
            mark: dict[str, Any] = {"kind": rtype.kind, "apiVersion": rtype.api_version}
            mark["metadata"] = {"resourceVersion": last_rv, "annotations": {"k8s.io/initial-events-end": "true"}}
            await resp.write(_line({"type": "BOOKMARK", "object": mark}))
        pending = list(backlog)
        while True:
            if not pending:
                now = time.monotonic()
                if expiry_s > 0 and now - started >= expiry_s:
                    if expire():
                        await resp.write(gone_event(f"too old resource version: watch expired after {expiry_s:g}s"))
                        break
                    expiry_s = 0.0
                wait = deadline - now
                if expiry_s > 0:
                    wait = min(wait, started + expiry_s - now)
                if wait <= 0 or hub.closing.is_set():
                    if bookmarks:
                        # The store's revision only when every event up to it went out (or was not this
                        # watch's): a client resuming from the bookmark must not skip events still queued.
                        at = str(store.resource_version) if queue.empty() else last_rv
                        mark = {
                            "kind": rtype.kind,
                            "apiVersion": rtype.api_version,
                            "metadata": {"resourceVersion": at},
                        }
                        await resp.write(_line({"type": "BOOKMARK", "object": mark}))
                    break
                try:
                    pending.append(await asyncio.wait_for(queue.get(), timeout=min(wait, 1.0)))
                except TimeoutError:
                    if request.transport is None or request.transport.is_closing():
                        break
                    continue
            # What else is already queued goes out in the same write (a tick writes thousands of pods:
            # one wait, one write and one TLS record per event was most of a watch's CPU).
            while len(pending) < _BATCH and not queue.empty():
                pending.append(queue.get_nowait())
            batch, pending = pending[:_BATCH], pending[_BATCH:]
            lines = []
            for event in batch:
                last_rv = str(event.rv)
                if event.resource != rtype.plural:
                    continue
                if namespace is not None and event.obj["metadata"].get("namespace") != namespace:
                    continue
                kind = _transition(event, matcher)
                if kind is not None:
                    lines.append(encode(kind, event.obj))
            if lines:
                await resp.write(b"".join(lines))
            if pending:
                # A long backlog (a watch from a revision thousands of writes ago) goes out a batch at a
                # time: a real API server serves every other request meanwhile.
                await asyncio.sleep(0)
        await resp.write_eof()
    except ConnectionResetError:
        pass  # the client went away: nothing left to tell it
    finally:
        unsubscribe()
    return resp
