"""Injected failures of the demo API (latency, errors, drops, watch expiry, silent watches, exec failures)."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields

from aiohttp import web
from aiohttp.typedefs import Middleware

from wizard.demo.api.status import ApiError
from wizard.demo.scenarios.scenario import FaultSpec

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Faults(FaultSpec):
    """The live fault settings: a scenario's ``FaultSpec`` plus filters, a budget and counters."""

    only: list[str] = field(default_factory=list)
    """Path prefixes the request faults apply to (``/apis/nvidia.com``); empty: every path."""
    methods: list[str] = field(default_factory=list)
    """HTTP methods the request faults apply to (``PATCH``); empty: every method."""
    when: Callable[[web.Request], bool] | None = field(default=None, compare=False)
    """A further test a request must pass to be faulted (e.g. ``lambda r: "dryRun" not in r.query``)."""
    drop_after: bool = False
    """Drop the connection after the handler acted (the client never learns it did) instead of before."""
    error_page: str | None = None
    """The body of an ``error_rate`` hit instead of a Status: a text page, as a proxy in front of a server answers."""
    silent_watch_s: float | None = None
    """Watches are answered 200 and then sent nothing, not even a bookmark, for this many seconds (or until the
    client goes away) before they end: 0 is a server that closes every watch at once; None: off."""
    budget: int | None = None
    """Injections left before the faults stop (None: no limit); each injection uses one."""
    injected: Counter[str] = field(default_factory=Counter, compare=False)
    """Faults injected so far, by kind (latency, drop, error, watch_expiry, silent_watch, exec_fail, exec_latency)."""
    matched: int = field(default=0, compare=False)
    """Requests the ``only`` / ``methods`` filter selected so far (faulted or not)."""
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.rng.seed(self.seed)

    @classmethod
    def from_spec(cls, spec: FaultSpec | None) -> Faults:
        """The live settings of a scenario's fault block."""
        spec = spec or FaultSpec()
        values = {f.name: getattr(spec, f.name) for f in fields(spec) if f.name in _FIELDS}
        values["exec_fail_nodes"] = list(values.get("exec_fail_nodes") or [])
        return cls(**values)

    def clear(self) -> None:
        """Switch every fault off."""
        self.latency_ms = self.exec_latency_ms = 0
        self.error_rate = self.drop_rate = 0.0
        self.watch_expiry_s = 0.0
        self.silent_watch_s = None
        self.error_page = None
        self.exec_fail_nodes = []
        self.only = []
        self.methods = []
        self.when = None
        self.drop_after = False
        self.budget = None

    def applies(self, path: str, method: str = "") -> bool:
        """Whether request faults apply to this path (and method, when given)."""
        if self.methods and method and method.upper() not in self.methods:
            return False
        return not self.only or any(path.startswith(prefix) for prefix in self.only)

    def take(self, kind: str) -> bool:
        """Use one injection of ``kind`` if the budget allows (and count it); False once it is spent."""
        if self.budget is not None:
            if self.budget <= 0:
                return False
            self.budget -= 1
        self.injected[kind] += 1
        return True

    @property
    def total(self) -> int:
        """Every fault injected so far."""
        return sum(self.injected.values())

    def injected_error(self) -> ApiError:
        """The error response of an ``error_rate`` hit."""
        if self.error_code == 429:
            return ApiError(
                429,
                "Too many requests, please try again later.",
                details={"retryAfterSeconds": self.retry_after_s},
                headers={"Retry-After": str(self.retry_after_s)},
            )
        return ApiError(
            self.error_code,
            "Internal error occurred: injected fault (gpu-wizard demo cluster)",
            details={"causes": [{"message": "injected fault (gpu-wizard demo cluster)"}]},
        )


_FIELDS = {f.name for f in fields(Faults)} - {"only", "rng", "when"}


class DroppedConnection(Exception):
    """Raised after aborting the transport: the client sees the connection close with no response."""


def fault_middleware(get_faults: Callable[[], Faults]) -> Middleware:
    """An aiohttp middleware applying latency, drops and error responses (drops after the handler with ``drop_after``)."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        faults = get_faults()
        if not faults.applies(request.path, request.method) or (faults.when and not faults.when(request)):
            return await handler(request)
        faults.matched += 1
        if faults.latency_ms > 0 and faults.take("latency"):
            await asyncio.sleep(faults.latency_ms / 1000)
        drop = faults.drop_rate > 0 and faults.rng.random() < faults.drop_rate and faults.take("drop")
        if drop and not faults.drop_after:
            _abort(request)
        if faults.error_rate > 0 and faults.rng.random() < faults.error_rate and faults.take("error"):
            if faults.error_page is not None:
                return web.Response(status=faults.error_code, text=faults.error_page, content_type="text/html")
            raise faults.injected_error()
        silent = faults.silent_watch_s
        if silent is not None and request.query.get("watch") in ("true", "1") and faults.take("silent_watch"):
            return await _silent_watch(request, silent)
        response = await handler(request)
        if drop:  # the handler acted; its answer never reaches the client
            _abort(request)
        return response

    return middleware


async def _silent_watch(request: web.Request, hold_s: float) -> web.StreamResponse:
    """A watch answered 200 that sends nothing for ``hold_s`` seconds, or until the client went away, then ends."""
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    until = time.monotonic() + hold_s
    while time.monotonic() < until and request.transport is not None and not request.transport.is_closing():
        await asyncio.sleep(0.02)
    with contextlib.suppress(ConnectionResetError):
        await response.write_eof()
    return response


def _abort(request: web.Request) -> None:
    if request.transport is not None:
        request.transport.abort()
    raise DroppedConnection(request.path)
