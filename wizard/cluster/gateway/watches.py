"""The gateway's watches: ``(type, object)`` events after a list's resourceVersion, decoded once.

:class:`Gone` (410) tells a caller to list again; a refused watch (403, 429, 5xx) is an
:class:`~wizard.cluster.errors.ApiError` carrying the server's ``Retry-After``, which the callers' reconnects
(:class:`wizard.retry.Reconnects`) wait. A caller that waits for one state of many objects
passes ``skip``: events whose raw line it has no use for are not decoded at all.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import quote

import aiohttp

from wizard import requestlog
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway.base import GatewayBase
from wizard.cluster.gateway.kube import ApiException, watch
from wizard.retry import DROPS

WATCH_SLACK_S = 15.0
"""How much longer than its ``timeoutSeconds`` the client waits for a watch to end: the server ends it then (with
a bookmark), so a watch silent past that is a dead connection, raised as :class:`~wizard.cluster.errors.TimedOut`."""
EARLY_END_S = 10.0
"""A watch the server ended with nothing at all (no event, no bookmark) sooner than this and sooner than its
``timeoutSeconds`` was cut short: :class:`EndedEmpty`, a failure its caller backs off from, so that a server
closing every watch at once is not asked again in a tight loop. One that stayed open longer paced itself."""


class Gone(ClusterError):
    """A watch's resourceVersion is too old (410): list again, then watch from the new version."""


class EndedEmpty(ClusterError):
    """The server ended a watch at once without an event or an error (see :data:`EARLY_END_S`)."""


class Watches(GatewayBase):
    """Watches of nodes, pods, DaemonSets and custom resources."""

    async def watch(
        self,
        what: str,
        fn: Callable[..., Any],
        *args: Any,
        resource_version: str,
        timeout_seconds: int = 300,
        skip: Callable[[str], bool] | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """``(type, object)`` events of a list call's watch after ``resource_version``, until the server ends
        it (after ``timeout_seconds``); :class:`Gone` when that version is too old (list again), :class:`EndedEmpty`
        when the server ended it at once with nothing (a failure to back off from, unlike a watch that ran its course).

        ``skip(line)``: an event whose raw JSON line it says the caller has no use for is not decoded and
        not yielded (error and bookmark events always are): a caller that waits for one state of many
        objects need not decode every object's every change."""
        stream = _DictWatch(skip)
        limit = float(timeout_seconds + WATCH_SLACK_S)
        started, delivered = time.monotonic(), False
        status: int | str = "stopped"  # the caller left it, or it was cancelled
        try:
            async for event in stream.stream(
                fn,
                *args,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
                _request_timeout=limit,
                **kwargs,
            ):
                delivered = True
                if event is not _SKIPPED:
                    yield str(event["type"]), event["raw_object"]
        except ApiException as exc:
            status = exc.status or "error"
            if exc.status == 410:
                raise Gone(f"{what}: the watch expired ({exc.reason})") from None
            # the answer's own headers (its Retry-After): _DictWatch keeps them on the exception
            headers = exc.headers or {}
            raise self._status_error(exc.status or 0, str(exc.reason or "").encode(), headers, what) from None
        except (TimeoutError, aiohttp.ClientError, *DROPS) as exc:
            status = "error"
            raise self._transport_error(exc, what, limit) from None
        except _NotAnEvent:
            raise ClusterError(
                f"{what}: the server sent a line that is not a watch event",
                "check what answers at the server's address (a proxy or load balancer in front of the API server?)",
            ) from None
        else:
            status = 200
        finally:
            if requestlog.enabled():
                response = stream.resp
                # a watch stopped before the server's first answer has no URL: say what it watched, selector too,
                # as one token (a log line is one request: its fields are split at spaces)
                selector = f" -l {kwargs['label_selector']}" if kwargs.get("label_selector") else ""
                unanswered = f"{self.server}?watch={quote(what + selector, safe='/,=')}"
                url = str(response.url) if response is not None else unanswered
                requestlog.record("api", "WATCH", url, status, started)
            await stream.close()
        elapsed = time.monotonic() - started
        if not delivered and elapsed < min(timeout_seconds, EARLY_END_S):
            raise EndedEmpty(
                f"{what}: the server ended the watch after {elapsed:.1f}s without an event (it was asked for {timeout_seconds}s)",
                "the API server, or a proxy or load balancer in front of it, closes watches early: check its health and timeouts",
            )

    def watch_resource(
        self,
        resource: str | tuple[str, str, str],
        resource_version: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        skip: Callable[[str], bool] | None = None,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Events of a kind after ``resource_version`` (see :meth:`watch`)."""
        what, api, operation, args = self._listing(resource, namespace)
        selectors = {"field_selector": field_selector} if field_selector else {}
        return self.watch(
            what.replace("listing", "watching", 1),
            getattr(api, operation),
            *args,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
            skip=skip,
            **selectors,
        )

    def watch_nodes(
        self, resource_version: str, *, timeout_seconds: int = 300
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Node events after ``resource_version`` (see :meth:`watch`)."""
        return self.watch(
            "watching nodes", self.core.list_node, resource_version=resource_version, timeout_seconds=timeout_seconds
        )

    def watch_pods(
        self, namespace: str, resource_version: str, *, label_selector: str | None = None, timeout_seconds: int = 300
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Pod events of a namespace after ``resource_version`` (see :meth:`watch`)."""
        what = f"watching pods in {namespace}"
        return self.watch(
            what,
            self.core.list_namespaced_pod,
            namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
        )


_SKIPPED: dict[str, Any] = {"type": "SKIPPED", "raw_object": {}}
"""What :class:`_DictWatch` returns for an event its ``skip`` predicate passed over (never yielded)."""
_ALWAYS_DECODED = ('"type":"ERROR"', '"type":"BOOKMARK"', '"type": "ERROR"', '"type": "BOOKMARK"')


class _NotAnEvent(Exception):
    """A line of a watch's stream that is no event (worded by :meth:`Watches.watch`)."""


class _DictWatch(watch.Watch):  # type: ignore[misc]
    """A watch whose events carry the object as decoded once: the library's ``return_type="object"`` encodes
    every decoded event back to JSON and decodes it again (three JSON passes per event, thousands of events
    in a 5,000-node rollout, all on the event loop). With ``skip``, lines the caller has no use for are
    not decoded at all."""

    def __init__(self, skip: Callable[[str], bool] | None = None) -> None:
        # Not the library's __init__: it builds an ApiClient (a fresh TLS context loading the system's CA
        # certificates, a stall on the loop) that only model deserialisation would use, and there is none here.
        self._raw_return_type = None
        self._stop = False
        self.resource_version = None
        self.resp: Any = None
        """The watch's response (an ``aiohttp.ClientResponse``), set by the library's ``next()``."""
        self._skip = skip

    async def close(self) -> None:
        if self.resp is not None:
            self.resp.release()
            self.resp = None

    def get_return_type(self, func: Any) -> None:
        return None  # no model and no re-decoding: ``object`` stays the decoded dict

    def unmarshal_event(self, data: str, response_type: Any) -> Any:
        resp = self.resp
        refused = resp is not None and resp.status >= 400  # an error answer, not a stream of events
        if (
            not refused
            and self._skip is not None
            and self._skip(data)
            and not any(kind in data for kind in _ALWAYS_DECODED)
        ):
            return _SKIPPED
        try:
            event = super().unmarshal_event(data, response_type)
        except ApiException as exc:
            # The library raises an error answer (a Status line: 429, 403, 500…) without its response's headers;
            # the Retry-After a 429 carries is the caller's to honour. An ERROR event of a stream is no answer.
            if exc.headers is None and refused:
                exc.headers = resp.headers
            raise
        except Exception:  # the library's own "Malformed JSON response": JSON with no type or object
            event = None
        if isinstance(event, dict):
            return event
        # No JSON event (the library hands a line that is no JSON back as it is): an error page, e.g. a proxy's
        # 503 in HTML, or a broken stream. Raised as what it is, never handed on to fail as a string.
        if refused:
            error = ApiException(status=resp.status, reason=str(resp.reason or f"HTTP {resp.status}"))
            error.headers = resp.headers
            raise error
        raise _NotAnEvent(data)
