"""Short garbage collections while thousands of results stream in (issue 12).

A full pass of Python's cyclic garbage collector walks every object the process holds: with 5,000
nodes' facts, the Textual DOM and the results so far, one pass held the event loop for hundreds of
milliseconds (the TUI's stall samples showed it as weakref callbacks inside JSON decoding), and the
streaming steps (discovery, the path check, the rollout, Verify) allocate enough to start several.
While such a stream runs, what existed before it is frozen (``gc.freeze``: collections skip it);
when the last stream ends it is unfrozen, so nothing leaks: a cycle that died meanwhile is collected
by a later pass.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_streams = 0
"""Streams running now: the heap is frozen while there is one."""


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze what exists now for the collector while the block runs (nested and concurrent blocks share it)."""
    global _streams
    gc.freeze()  # again for a second stream: what the first one built meanwhile is long-lived too
    _streams += 1
    try:
        yield
    finally:
        _streams -= 1
        if _streams == 0:
            gc.unfreeze()


def refreeze() -> None:
    """While a stream runs, what it built so far is long-lived too: later passes skip it (called per drawn batch).

    Without it each pass walked every result so far (30,000 checks at 5,000 nodes); with it, what the
    last batch made. ``gc.freeze`` only moves a list, and it all goes back at the stream's end.
    """
    if _streams:
        gc.freeze()


def streams() -> int:
    """How many streams hold the heap frozen (a test checks that a left step let go)."""
    return _streams
