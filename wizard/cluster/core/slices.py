"""Keeping the event loop responsive through bulk work: short slices (the collector's part: :mod:`wizard.collector`).

A loop that handles thousands of items in a row (watch events, results, list pages) without awaiting
anything that suspends stalls every other task for the whole run: the TUI's keys and redraws, the
heartbeats, other nodes' execs. :class:`Slices` measures how long the caller has held the loop and,
once a slice's budget is spent, yields to it (``await asyncio.sleep(0)``): everything that became
ready meanwhile runs, then the caller continues. The total work is the same; only its slices are short.
"""

from __future__ import annotations

import asyncio
import time

SLICE_S = 0.005
"""How long a caller may hold the loop before it yields: well under the 100 ms a user notices, and long
enough that the yields themselves cost nothing measurable."""


class Slices:
    """``await slices.pause()`` between items: yields to the loop once ``budget_s`` has passed since the last yield."""

    def __init__(self, budget_s: float = SLICE_S) -> None:
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.yields = 0
        """How often it yielded (for tests)."""

    def due(self) -> bool:
        """Whether the current slice has used its budget."""
        return time.monotonic() - self.started >= self.budget_s

    async def pause(self) -> None:
        """Yield to the loop if the slice's budget is spent; start a new slice."""
        if time.monotonic() - self.started >= self.budget_s:
            await asyncio.sleep(0)
            self.yields += 1
            self.started = time.monotonic()
