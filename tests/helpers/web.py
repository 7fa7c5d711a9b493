"""For the classroom tests: the tiny Textual app the pool's sessions run, and polling for a condition."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ECHO_APP = [sys.executable, str(Path(__file__).resolve().parents[1] / "web_echo_app.py")]


def wait_until(condition: object, timeout: float = 10.0) -> bool:
    """Poll ``condition()`` until true or ``timeout`` seconds pass."""
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())
