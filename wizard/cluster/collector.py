"""The cyclic garbage collector and the event loop: bulk work pauses it, and what the engine keeps is frozen.

A full collection walks every container object the process holds, in one go, on whichever thread
allocated last: after the Kubernetes client's import that is ~190,000 objects and 80-230 ms on this
project's 2-core machine, and with 5,000 nodes' facts and a rollout's caches it was 0.15-0.6 s, again
and again while pages of JSON came in — each one a stall of the event loop (the TUI's). JSON holds no
reference cycles, so the collector has nothing to find in what the engine reads.

One policy for the whole engine (the only module that touches :mod:`gc` while a front end runs):

* :func:`paused` — the collector paused while pages are decoded and summarised (reference counting
  still frees them); pauses are shared by concurrent and nested users and end with the last of them.
* :func:`bulk` — :func:`paused`, then what is alive is frozen (``gc.freeze``) once the last user
  ends: a bulk read keeps what it decoded, and later collections no longer walk it.
* :func:`keep` — freeze what is alive now (a watch that replaced what a list kept; a long run's start).
* :func:`frozen` — a long run (verifying 5,000 nodes) :func:`keep`\\ s the heap as it is when it starts
  and what it made when it ends, so the results it piles up meanwhile are scanned without the nodes'
  facts or a front end's widgets.

Nothing is ever unfrozen: an unfreeze would hand the whole heap back for the next full collection (the
stall this module exists to avoid). Frozen objects are still freed by reference counting when dropped;
only a reference cycle among objects alive at a freeze (e.g. a screen's widgets the user leaves later)
is never collected — a bounded cost per freeze, a handful of freezes per run.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_pausing = 0
_was_enabled = False
_freeze_when_resumed = False


@contextlib.contextmanager
def paused(*, freeze: bool = False) -> Iterator[None]:
    """The cyclic collector paused for the block; with ``freeze``, what is alive is frozen when the last
    concurrent pause ends."""
    global _pausing, _was_enabled, _freeze_when_resumed
    if _pausing == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _pausing += 1
    _freeze_when_resumed |= freeze
    try:
        yield
    finally:
        _pausing -= 1
        if _pausing == 0:
            if _freeze_when_resumed:
                gc.freeze()
            _freeze_when_resumed = False
            if _was_enabled:
                gc.enable()


def bulk() -> contextlib.AbstractContextManager[None]:
    """Pause the cyclic collector for a bulk read; when the last concurrent pause ends, freeze what is alive."""
    return paused(freeze=True)


def keep() -> None:
    """Freeze what is alive now (unless a pause is on: it freezes or resumes when it ends), after collecting the
    young generations (cheap: their cyclic garbage is not frozen with the rest)."""
    if _pausing == 0 and gc.isenabled():
        gc.collect(1)
        gc.freeze()


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """A long run: the heap as it is now is frozen, and what is alive when the run ends."""
    keep()
    try:
        yield
    finally:
        keep()
