"""Debian's chromium driven by Playwright (a fixture), and what a page's session has drawn."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from benchmarks.web import screen_text

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def missing(message: str) -> None:
    """A missing browser or driver fails under CI and skips, loudly, elsewhere."""
    message += ": the browser tests did NOT run"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    """One headless chromium per browser-test module (each test opens its own context).

    Not per session: Playwright's sync API keeps an event loop running in this thread while it is open,
    and every later ``asyncio.run()`` in the same worker then fails ("cannot be called from a running
    event loop"), which took 63 tests of other modules down when it was tried.
    """
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        missing("chromium is not installed (bash .ci/system-deps.sh installs it)")
    try:
        from playwright import sync_api
    except ImportError:
        missing("playwright is not installed (pip install -e '.[test]')")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


class Screen:
    """What one page's session has drawn, from the websocket frames it received."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.raw: list[str] = []
        page.on("websocket", lambda socket: socket.on("framereceived", self._frame))

    def _frame(self, payload: str | bytes) -> None:
        if isinstance(payload, bytes):
            self.raw.append(payload.decode("utf-8", "replace"))

    @property
    def text(self) -> str:
        return screen_text("".join(self.raw))

    def wait_for(self, wanted: str, *, after: int = 0, timeout: float = 30.0) -> int:
        """Wait until ``wanted`` is drawn past position ``after``; returns the position after it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.text.find(wanted, after)
            if found >= 0:
                return found + len(wanted)
            self.page.wait_for_timeout(100)
        raise AssertionError(f"{wanted!r} was not drawn within {timeout:.0f} s; last: {self.text[-300:]!r}")

    def press(self, key: str) -> int:
        """Type a key into the terminal; returns the current end of the drawn text."""
        mark = len(self.text)
        self.page.keyboard.press(key)
        return mark
