"""Injected failures of the demo API: latency, error responses, dropped connections, watch expiry, exec failures.

:class:`Faults` starts from a scenario's ``FaultSpec`` and stays mutable while the server runs, so a test
can write ``cluster.faults.error_rate = 1.0`` (optionally ``cluster.faults.only = ["/apis/nvidia.com"]``)
and the next request sees it. Randomness comes from one seeded ``random.Random``: a given seed and
request sequence fail the same way every run.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields

from aiohttp import web
from aiohttp.typedefs import Middleware

from wizard.demo.scenario import FaultSpec
from wizard.demo.status import ApiError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Faults:
    """The live fault settings (same fields as ``FaultSpec`` plus ``only``)."""

    latency_ms: int = 0
    error_rate: float = 0.0
    error_code: int = 500
    retry_after_s: int = 1
    drop_rate: float = 0.0
    watch_expiry_s: float = 0.0
    exec_fail_nodes: list[str] = field(default_factory=list)
    exec_latency_ms: int = 0
    seed: int = 0
    only: list[str] = field(default_factory=list)
    """Path prefixes the request faults apply to (``/apis/nvidia.com``); empty: every path."""
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

    def reseed(self, seed: int | None = None) -> None:
        """Restart the random sequence (from ``seed`` or the current ``seed`` field)."""
        if seed is not None:
            self.seed = seed
        self.rng.seed(self.seed)

    def clear(self) -> None:
        """Switch every fault off."""
        self.latency_ms = self.exec_latency_ms = 0
        self.error_rate = self.drop_rate = 0.0
        self.watch_expiry_s = 0.0
        self.exec_fail_nodes = []
        self.only = []

    def applies(self, path: str) -> bool:
        """Whether request faults apply to this path."""
        return not self.only or any(path.startswith(prefix) for prefix in self.only)

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


_FIELDS = {f.name for f in fields(Faults)} - {"only", "rng"}


class DroppedConnection(Exception):
    """Raised after aborting the transport: the client sees the connection close with no response."""


def fault_middleware(get_faults: Callable[[], Faults]) -> Middleware:
    """An aiohttp middleware applying latency, drops and error responses before the handler runs."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        faults = get_faults()
        if faults.applies(request.path):
            if faults.latency_ms > 0:
                await asyncio.sleep(faults.latency_ms / 1000)
            if faults.drop_rate > 0 and faults.rng.random() < faults.drop_rate:
                if request.transport is not None:
                    request.transport.abort()
                raise DroppedConnection(request.path)
            if faults.error_rate > 0 and faults.rng.random() < faults.error_rate:
                raise faults.injected_error()
        return await handler(request)

    return middleware
