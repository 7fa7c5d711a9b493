"""Pytest plugin for the TUI tests: SVG snapshots on ``app.export_screenshot()`` and Pilot helpers.

``pytest-textual-snapshot`` pins pytest < 9, so this is the small replacement: a snapshot is the
app's own SVG export, compared byte for byte with ``tests/snapshots/svg/<name>.svg``; next to it a
``.txt`` with the plain screen text makes a mismatch readable in the failure message and in review.
``pytest --update-snapshots`` (or ``GPU_WIZARD_UPDATE_SNAPSHOTS=1``) rewrites both, except under
``CI=true``, where asking for it fails the test.

The ``tui_env`` fixture makes frames stable: a private HOME (paths show as ``~/…``), no XDG
overrides, no animations, and an Input cursor that does not blink.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

SVG_DIR = Path(__file__).parent / "svg"
#: Frames that did not match, for a look (outside the checkout).
ACTUAL_DIR = Path(tempfile.gettempdir()) / "gpu-wizard-snapshots"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite the TUI SVG snapshots in tests/snapshots/svg instead of comparing",
    )


def screen_text(app: Any) -> str:
    """The active screen (with any dialog on top) as plain text, one line per terminal row."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None, record=True
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_for(pilot: Any, predicate: Callable[[], object], timeout: float = 15.0, what: str = "") -> None:
    """Let the app run until ``predicate()`` is true; fail with the screen text after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}:\n{screen_text(pilot.app)}")
        await pilot.pause(0.05)
    await pilot.pause()


def export_screenshots(name: str, svg: str) -> None:
    """With ``GPU_WIZARD_SCREENSHOTS=DIR``, also write the frame to DIR as SVG (and PNG via rsvg-convert).

    This is how ``docs/screenshots`` is made: the app's own export, from the same stable walk.
    """
    folder = os.environ.get("GPU_WIZARD_SCREENSHOTS")
    if not folder:
        return
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    svg_file = target / f"{name}.svg"
    svg_file.write_text(svg, encoding="utf-8")
    converter = shutil.which("rsvg-convert")
    if converter:
        subprocess.run([converter, "-o", str(svg_file.with_suffix(".png")), str(svg_file)], check=True, timeout=60)


class Snapshot:
    """Compare the app's SVG export with the committed one (or rewrite it)."""

    def __init__(self, update: bool) -> None:
        self.update = update
        self.failures: list[str] = []
        """Mismatches so far: a walk checks every frame, then :meth:`verify` reports them together."""

    async def check(self, pilot: Any, name: str, redact: dict[str, str] | None = None) -> None:
        """Snapshot the current frame as ``name`` (waits for pending repaints first).

        ``redact`` maps a regular expression to a replacement of the same length (a timestamp in a
        file name, say), applied to the SVG and the text alike so the layout is unchanged.
        """
        app = pilot.app
        await pilot.pause()
        await pilot.pause(0.05)
        svg = app.export_screenshot(title=f"gpu-wizard — {name}")
        for _ in range(20):  # a frame still settling (a tab underline after a late layout) is not the frame
            await pilot.pause(0.05)
            settled = app.export_screenshot(title=f"gpu-wizard — {name}")
            if settled == svg:
                break
            svg = settled
        text = screen_text(app)
        for pattern, replacement in (redact or {}).items():
            svg = re.sub(pattern, replacement, svg)
            text = re.sub(pattern, replacement, text)
        # Rich names the SVG's CSS classes after a hash of the frame; a redacted frame needs a fixed name
        svg = re.sub(r"terminal-\d+", "terminal-frame", svg)
        export_screenshots(name, svg)
        svg_path, text_path = SVG_DIR / f"{name}.svg", SVG_DIR / f"{name}.txt"
        if self.update or not svg_path.exists():
            SVG_DIR.mkdir(parents=True, exist_ok=True)
            svg_path.write_text(svg, encoding="utf-8")
            text_path.write_text(text, encoding="utf-8")
            if not self.update:
                self.failures.append(f"new snapshot {svg_path.name} written; check it, then run again")
            return
        if svg_path.read_text(encoding="utf-8") == svg:
            return
        before = text_path.read_text(encoding="utf-8") if text_path.exists() else ""
        diff = "\n".join(difflib.unified_diff(before.splitlines(), text.splitlines(), "snapshot", "now", lineterm=""))
        actual = ACTUAL_DIR / f"{name}.svg"
        ACTUAL_DIR.mkdir(parents=True, exist_ok=True)
        actual.write_text(svg, encoding="utf-8")
        self.failures.append(
            f"snapshot {name} differs (new frame in {actual}; --update-snapshots accepts it)\n"
            + (diff or "(same text: colours or styles changed)")
        )

    def verify(self) -> None:
        """Fail with every mismatch found (call once at the end of the test)."""
        if self.failures:
            pytest.fail("\n\n".join(self.failures))


@pytest.fixture
def snapshot(request: pytest.FixtureRequest) -> Snapshot:
    """Snapshot comparison; ``--update-snapshots`` rewrites."""
    update = (
        bool(request.config.getoption("--update-snapshots")) or os.environ.get("GPU_WIZARD_UPDATE_SNAPSHOTS") == "1"
    )
    if update and refuse_update():
        pytest.fail("snapshot updates are refused under CI=true: update them locally, review, and commit them")
    return Snapshot(update)


def refuse_update() -> bool:
    """CI compares frames, never rewrites them (a rewrite there would pass any change silently)."""
    return os.environ.get("CI", "").lower() in ("true", "1")


@pytest.fixture
def tui_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A private HOME and stable rendering for TUI tests; returns the HOME folder."""
    from textual.widgets import Input

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "KUBECONFIG", "TEXTUAL_THEME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    monkeypatch.chdir(tmp_path)
    return home
