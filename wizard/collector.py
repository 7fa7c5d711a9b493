"""The one policy for Python's cyclic garbage collector while gpu-wizard works (engine and TUI alike).

A full collection walks every container object the process holds, in one go, holding the GIL: after
the Kubernetes client's import that is ~190,000 objects, and 5,000 nodes' facts, a rollout's caches,
30,000 results and the Textual DOM add far more (docs/benchmarks.md, "Costs behind the code") — each pass an event-loop stall (the TUI's keys and redraws wait). JSON holds no reference
cycles, so the collector has nothing to find in most of what the engine reads.

* :func:`paused` — the collector paused while pages are decoded and summarised (reference counting
  still frees them); pauses are shared by concurrent and nested users and end with the last of them,
  inside a run with :func:`keep` (what the pause kept is frozen before the collector may walk it).
* :func:`frozen` — a long run (discovery's watch, the path check, the rollout, verification) freezes
  what exists when it starts (``gc.freeze``: collections skip it); :func:`keep` freezes what the run
  built so far (the caches, the results) as it goes. When the last run ends everything is unfrozen:
  nothing is frozen for good, because a removed screen (Textual widgets reference their parents) is
  cyclic garbage, and freezing it for good would leak every step the user leaves.
* :func:`streamed` — a long run handed out as a stream: frozen while it is consumed, and what the consumer
  builds kept as it goes (the facade's streams come this way; a front end calls no collector function for them).
* :func:`defer_full_collections` / :func:`collect_if_idle` — a front end that knows when its user waits
  for nothing (the TUI) takes the full collections, which an unfreeze would otherwise set off at a random
  moment, for itself: young generations are still collected as usual (cheap), the full pass runs when
  the user is idle and no read pauses the collector, at most once per ``min_interval_s``.
* :class:`InteractivePolicy` — all of the above for an interactive front end, in one object its entry point
  hands it (``wizard.launch`` gives one to the TUI): the collector back on at the first frame, full collections
  deferred while it runs and taken when its user has pressed nothing for a while and the process computes
  nothing (a render in a thread, a stream's burst), so the front end itself names no collector function.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import AsyncGenerator, Iterator
from typing import TypeVar

T = TypeVar("T")

_pausing = 0
_was_enabled = False
_runs = 0
_last_full = 0.0
FULL_AFTER = 10
"""Young-generation collections since the last full one before an idle full collection is worth it
(CPython's own default for its third generation)."""


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector paused for the block (shared by nested and concurrent blocks)."""
    global _pausing, _was_enabled
    if _pausing == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _pausing += 1
    try:
        yield
    finally:
        _pausing -= 1
        if _pausing == 0:
            # Inside a run, what the pause kept is frozen BEFORE the collector is back: the first object
            # allocated after gc.enable() (even the StopIteration that ends this generator) would otherwise
            # set off a young collection walking all of it at once (a stall after 5,000 nodes were read).
            keep()
            if _was_enabled:
                gc.enable()


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """What exists now is left out of collections until the last overlapping run ends (then all is unfrozen)."""
    global _runs
    gc.freeze()  # again for a second run: what the first one built meanwhile is long-lived too
    _runs += 1
    try:
        yield
    finally:
        _runs -= 1
        if _runs == 0:
            gc.unfreeze()


def keep() -> None:
    """Inside a run: what was built so far is long-lived too; later collections skip it (``gc.freeze`` only
    moves a list, and it all goes back when the last run ends). Outside a run: nothing."""
    if _runs:
        gc.freeze()


KEEP_S = 0.1
"""How often :func:`streamed` freezes what its consumer built (``gc.freeze`` also resets the young generation's
count: called on every item, young collections would never run)."""


async def streamed(stream: AsyncGenerator[T, None]) -> AsyncGenerator[T, None]:
    """``stream``'s items as one :func:`frozen` run, keeping what the consumer built from them as it goes (its rows,
    its results: :func:`keep`, at most every :data:`KEEP_S`); ``stream`` is closed with it.

    The cluster's facade hands its long runs (a node watch, the host probe, a rollout, a verification) out this
    way, so a front end gets the collector policy with the stream and need not know it."""
    with frozen():
        kept = time.monotonic()
        async with contextlib.aclosing(stream):
            async for item in stream:
                yield item
                if time.monotonic() - kept >= KEEP_S:  # the consumer has handled the item: what it built stays
                    keep()
                    kept = time.monotonic()


def runs() -> int:
    """How many runs hold the heap frozen now (a test checks that a left step let go)."""
    return _runs


_DEFERRED = 1 << 30
_full_threshold: int | None = None


def defer_full_collections() -> None:
    """Full collections only through :func:`collect_if_idle` until :func:`resume_full_collections` (the young
    generations as before)."""
    global _full_threshold
    young, middle, full = gc.get_threshold()
    if full != _DEFERRED:
        _full_threshold = full
    gc.set_threshold(young, middle, _DEFERRED)


def resume_full_collections() -> None:
    """CPython's own full collections again (the front end ends)."""
    global _full_threshold
    young, middle, _ = gc.get_threshold()
    if _full_threshold is not None:
        gc.set_threshold(young, middle, _full_threshold)
        _full_threshold = None


def collect_if_idle(min_interval_s: float = 60.0) -> bool:
    """A full collection now, if one is due: called by a front end when its user waits for nothing.

    Not while a read pauses the collector, not before ``FULL_AFTER``
    young collections happened since the last full one, and at most once per ``min_interval_s`` (an idle
    TUI must stay near 0 % CPU). A run may hold the heap frozen meanwhile (the Nodes step's watch does for
    as long as the step is open): the pass then walks only what is not frozen. True when it collected.
    """
    global _last_full
    now = time.monotonic()
    if _pausing or not gc.isenabled() or gc.get_count()[2] < FULL_AFTER or now - _last_full < min_interval_s:
        return False
    _last_full = now
    gc.collect()
    return True


class InteractivePolicy:
    """The collector policy of an interactive front end, handed to it by its entry point (``wizard.launch``).

    The front end says when its first frame is up (:meth:`started`), when its user gives input
    (:meth:`user_input`), calls :meth:`check` every :attr:`CHECK_S` and :meth:`ended` when it closes; the policy
    decides the rest. A full collection walks the whole heap in one stall (up to a second at 5,000 nodes): it
    runs only when, for :attr:`IDLE_BEFORE_S`, the user has pressed nothing and the process used under
    :attr:`BUSY_CPU_SHARE` of a core at each check — work under way (a render in a thread at 5,000 nodes, an
    image check, a watch's burst) is no idle time, whether or not a run froze what it holds.
    """

    CHECK_S = 2.0
    """How often the front end calls :meth:`check`."""
    IDLE_BEFORE_S = 3.0
    """How long the user must have pressed nothing before a full collection (young generations run as usual)."""
    BUSY_CPU_SHARE = 0.05
    """The share of a core the process used between two checks above which it is busy, not idle (an idle TUI
    uses well under 1 %: docs/benchmarks.md)."""

    def __init__(self) -> None:
        self._last_input = time.monotonic()
        self._last_busy = self._last_input
        self._last_check = (self._last_input, time.process_time())

    def started(self) -> None:
        """The front end's first frame is up: the collector on (``wizard.launch`` paused it while the front end
        loaded), its full passes deferred to idle times."""
        gc.enable()
        defer_full_collections()
        self._last_check = (time.monotonic(), time.process_time())

    def user_input(self) -> None:
        """A key, a click, a scroll: the user is there; the full collection waits."""
        self._last_input = time.monotonic()

    def check(self) -> bool:
        """The deferred full collection, if the user is idle, the process computes nothing and one is due
        (:func:`collect_if_idle`); True when it collected."""
        now, cpu = time.monotonic(), time.process_time()
        then, cpu_then = self._last_check
        self._last_check = (now, cpu)
        if cpu - cpu_then > self.BUSY_CPU_SHARE * max(now - then, 1e-3):
            self._last_busy = now
        if now - max(self._last_input, self._last_busy) < self.IDLE_BEFORE_S:
            return False
        return collect_if_idle()

    def ended(self) -> None:
        """The front end closes: CPython's own full collections again."""
        resume_full_collections()
