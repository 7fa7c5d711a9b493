"""The real ``gpu-wizard --demo SCENARIO`` walked in tmux at 80×24 with the keyboard, as a newcomer would.

Issue 16's "done when": every scenario reaches Verify, or the documented stop of a failure
scenario, with no crash. The wizard runs in a detached tmux session (a real terminal, the real
console script, a private HOME); keys go in with ``send-keys`` and the screen comes back with
``capture-pane``. The default suite walks one scenario end to end (about half a minute on two
cores); ``GPU_WIZARD_TMUX_ALL=1`` walks every scenario.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

GPU_WIZARD = Path(sys.executable).parent / "gpu-wizard"
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/system-deps.sh)")


class Tmux:
    """One detached tmux session running a command at a fixed size, on its own server socket."""

    def __init__(self, folder: Path, argv: list[str], width: int = 80, height: int = 24) -> None:
        self.socket = str(folder / "tmux.sock")
        home = folder / "home"
        home.mkdir(exist_ok=True)
        env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", ""),
            "TERM": "xterm-256color",
            "TEXTUAL_ANIMATIONS": "none",
        }
        command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv])
        self._tmux("new-session", "-d", "-s", "walk", "-x", str(width), "-y", str(height), command)
        self._tmux("set-option", "-t", "walk", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        out = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=10)
        return out.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "walk")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self._tmux("send-keys", "-t", "walk", key)
            time.sleep(0.05)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "walk", "-l", text)

    def wait_for(self, *texts: str, timeout: float = 30.0) -> str:
        """Wait until one of ``texts`` shows; return it. Fails with the screen (and no crash is allowed)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            assert "stopped on an unexpected error" not in screen and "Traceback" not in screen, screen
            for text in texts:
                if text in " ".join(screen.split()):
                    return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {texts!r}:\n{screen}")
            time.sleep(0.2)

    def close(self) -> None:
        self._tmux("kill-server")


@dataclass(frozen=True)
class Walk:
    """A scenario's walk: the version to type on the Driver step (upstream) and where the walk ends."""

    scenario: str
    version: str = ""
    repository: str = ""
    """Typed into "Cluster pulls from" (the site's mirror, where the demo registry holds the image)."""
    stop: str = ""
    """The documented stop of a failure scenario (text on screen), or "" to reach a verified install."""


WALKS = [
    Walk("sle-micro-precompiled", repository="registry.example.com/mlops"),
    Walk("preinstalled"),
    Walk("ubuntu-upstream", version="580.126.20"),
    Walk("existing-install"),
    Walk("mixed-os"),
    Walk("from-nodelist"),
    Walk("airgapped", version="580.126.20", stop="1 blocking finding: fix or tick 'apply anyway'"),
    Walk("noexec-run", version="580.126.20", stop="path check failed: fix or tick 'continue anyway'"),
    Walk("missing-tuple", stop="blocking finding"),
    Walk("large"),
]
DEFAULT = {"sle-micro-precompiled"}
SELECTED = WALKS if os.environ.get("GPU_WIZARD_TMUX_ALL") == "1" else [w for w in WALKS if w.scenario in DEFAULT]


def next_step(tmux: Tmux, title: str, timeout: float = 30.0) -> None:
    """Ctrl+N until the step's title shows in the top bar (``4/8 Driver``): Next may wait for work to finish."""
    deadline = time.monotonic() + timeout
    while True:
        tmux.keys("C-n")
        try:
            tmux.wait_for(title, timeout=3)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise


@pytest.mark.parametrize("walk", SELECTED, ids=[w.scenario for w in SELECTED])
def test_tmux_walk(tmp_path: Path, walk: Walk) -> None:
    tmux = Tmux(tmp_path, [str(GPU_WIZARD), "--demo", walk.scenario])
    try:
        tmux.wait_for("✓ operator", timeout=60)
        next_step(tmux, "2/8 Nodes")
        tmux.wait_for("● live", timeout=60)
        next_step(tmux, "3/8 Mode")
        tmux.keys("C-n")
        found = tmux.wait_for("4/8 Driver", "5/8 Paths")
        if found == "4/8 Driver":
            statuses = ("present in target", "no registry to ask", "missing in target", "only in source")
            tmux.wait_for(*statuses, "unreachable", "complete the fields above", timeout=30)
            if walk.version:
                tmux.type(walk.version)
            if walk.repository:
                tmux.keys("Tab", "Tab", "Home", "C-k")  # version, source, then "Cluster pulls from"
                tmux.type(walk.repository)
                statuses = ("present in target",)
            tmux.wait_for(*statuses, timeout=30)
            next_step(tmux, "5/8 Paths")
        end = tmux.wait_for("usable on all", "path problems", "no path checks", timeout=60)
        if end == "path problems":
            tmux.keys("C-n")
            assert tmux.wait_for(walk.stop or "(no stop expected)") == walk.stop
            return
        next_step(tmux, "6/8 Preview")
        tmux.wait_for("server dry-run accepted", "server dry-run rejected", timeout=60)
        tmux.keys("C-n")
        found = tmux.wait_for("7/8 Apply", "blocking finding")
        if found != "7/8 Apply":
            assert walk.stop and walk.stop in " ".join(tmux.screen().split()), tmux.screen()
            return
        tmux.keys("Enter")
        tmux.wait_for("Apply to", timeout=20)
        tmux.keys("Tab", "Enter")  # focus starts on Cancel
        tmux.wait_for("ClusterPolicy ready", "failed", timeout=120)
        next_step(tmux, "8/8 Verify", timeout=60)
        assert tmux.wait_for("✓ verified", "✗ not verified", timeout=120) == "✓ verified", tmux.screen()
        tmux.keys("C-n")  # Finish
        time.sleep(1)
        assert "stopped on an unexpected error" not in tmux.screen()
    finally:
        tmux.close()
