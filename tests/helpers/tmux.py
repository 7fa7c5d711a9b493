"""The real ``gpu-wizard`` console script in a detached tmux session at a fixed size, driven by keys."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

GPU_WIZARD = Path(sys.executable).parent / "gpu-wizard"
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/system-deps.sh)")


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


def next_step(tmux: Tmux, title: str, timeout: float = 30.0, stop: str = "") -> str:
    """Ctrl+N until the step's title shows in the top bar (``4/8 Driver``) or ``stop`` does; returns which."""
    deadline = time.monotonic() + timeout
    wanted = (title, stop) if stop else (title,)
    while True:
        tmux.keys("C-n")
        try:
            return tmux.wait_for(*wanted, timeout=3)
        except AssertionError:
            if time.monotonic() > deadline:
                raise
