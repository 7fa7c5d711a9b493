"""The cyclic garbage collector and the event loop: bulk reads pause it, and what they keep is frozen.

A full collection walks every container object the process holds, in one go, on whichever thread
allocated last: after the Kubernetes client's import that is ~190,000 objects and 80-230 ms on this
project's 2-core machine, and with 5,000 nodes' facts and a rollout's caches it was 0.15-0.6 s, again
and again while pages of JSON came in — each one a stall of the event loop (the TUI's). JSON holds no
reference cycles, so the collector has nothing to find in what the engine reads.

:func:`bulk` pauses the collector while a bulk read decodes and keeps objects (the pause is shared by
concurrent reads: it ends with the last of them), then freezes what is alive (``gc.freeze``): later
collections no longer walk it. Frozen objects are still freed by reference counting when dropped; only
a reference cycle among objects alive at that moment would wait for :func:`gc.unfreeze`. A watch that
replaces what a list kept calls :func:`keep` now and then, so the replacements are not walked either.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_active = 0
_was_enabled = False


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic collector for a bulk read; when the last concurrent one ends, freeze what is alive."""
    global _active, _was_enabled
    if _active == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _active += 1
    try:
        yield
    finally:
        _active -= 1
        if _active == 0:
            gc.freeze()
            if _was_enabled:
                gc.enable()


def keep() -> None:
    """Freeze what is alive now (unless a bulk read will), after collecting the young generations (cheap:
    their cyclic garbage is not frozen with the rest)."""
    if _active == 0 and gc.isenabled():
        gc.collect(1)
        gc.freeze()
