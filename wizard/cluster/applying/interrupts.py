"""Phases an interrupt must not cut in half: the writes of a multi-object apply and their undo.

The command line turns Ctrl-C and SIGTERM into a cancellation of the running command. Work run
through :func:`run_to_end` finishes first (every object applied, or restored from the backup);
the caller then learns that an interrupt arrived and reports it. While such a phase runs, a
second Ctrl-C does not stop the process (:func:`active` tells the signal handler so): stopping
there is exactly what would leave the cluster half-changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_running = 0


def active() -> bool:
    """Whether a phase that must run to its end is in progress."""
    return _running > 0


async def run_to_end(work: Coroutine[Any, Any, T]) -> tuple[T, bool]:
    """Await ``work`` to its end even when the caller is cancelled; (its result, whether a cancel arrived)."""
    global _running
    task = asyncio.ensure_future(work)
    me = asyncio.current_task()
    interrupted = False
    _running += 1
    try:
        while True:
            try:
                result = await asyncio.shield(task)
            except asyncio.CancelledError:
                if task.done():  # the work itself was cancelled (the event loop is shutting down)
                    raise
                interrupted = True
                if me is not None:
                    me.uncancel()  # delivered later, by the caller, once the work is done
                continue
            return result, interrupted
    finally:
        _running -= 1
