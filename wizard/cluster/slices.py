"""Keeping the event loop responsive through bulk work: short slices, and no garbage collection of decoded JSON.

A loop that handles thousands of items in a row (watch events, results, list pages) without awaiting
anything that suspends stalls every other task for the whole run: the TUI's keys and redraws, the
heartbeats, other nodes' execs. :class:`Slices` measures how long the caller has held the loop and,
once a slice's budget is spent, yields to it (``await asyncio.sleep(0)``): everything that became
ready meanwhile runs, then the caller continues. The total work is the same; only its slices are short.

:func:`gc_frozen`: a long run (verifying 5,000 nodes) keeps allocating objects that live a while (results,
log lines a front end keeps); once enough of them pile up the collector scans the whole heap, the
5,000 nodes' facts and the TUI's widgets included, in one pause of hundreds of milliseconds. Frozen
(``gc.freeze``), what existed before the run is left out of those scans; the run's own garbage is still
collected, and the heap is handed back to the collector (``gc.unfreeze``) when the last such run ends.

:func:`gc_paused`: decoding a page of 500 pods allocates ~100,000 containers; each burst made the cyclic
collector run, and whatever the decoded pages kept alive long enough was promoted until a full
collection scanned the whole heap (hundreds of milliseconds at 5,000 nodes, on the loop). JSON has no
reference cycles: while pages are decoded and summarised the collector is paused, reference counting
frees the pages, and the collector resumes afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Iterator

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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for the block (left as it was if it was paused already)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


_frozen_runs = 0


@contextlib.contextmanager
def gc_frozen() -> Iterator[None]:
    """Objects that exist when the block starts are left out of the collector's scans until the last such
    block (they may nest and overlap: verification runs the host probe inside) ends."""
    global _frozen_runs
    if _frozen_runs == 0:
        gc.freeze()
    _frozen_runs += 1
    try:
        yield
    finally:
        _frozen_runs -= 1
        if _frozen_runs == 0:
            gc.unfreeze()
