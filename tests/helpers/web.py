"""For the classroom tests: the tiny Textual app the pool's sessions run, polling for a condition, F9 to a step."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.web import screen_text

if TYPE_CHECKING:
    from benchmarks.web import Tab

ECHO_APP = [sys.executable, str(Path(__file__).resolve().parent / "web_echo_app.py")]


def wait_until(condition: object, timeout: float = 10.0) -> bool:
    """Poll ``condition()`` until true or ``timeout`` seconds pass."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


async def next_step(tab: Tab, *wanted: str, timeout: float = 60.0) -> str:
    """F9 until one of ``wanted`` is drawn anew (a step title, or the text that holds Next); returns it."""
    deadline = time.monotonic() + timeout
    while True:
        tab.output = ""
        await tab.press("\x1b[20~")
        for text in wanted:
            try:
                await tab.read_until(text, 3)
                return text
            except TimeoutError:
                continue
        if time.monotonic() > deadline:
            raise AssertionError(f"none of {wanted} after F9: {screen_text(tab.output)[-300:]!r}")
