"""No key or paste is lost in a real terminal, typed in bursts or at 15-30 ms a key, beside a CPU hog.

The terminal side of ``test_tui_input_order`` (issue 25 item 4, issue 28's lost keystrokes): the real
``gpu-wizard --demo ubuntu-upstream`` in tmux at 80×24, keys sent by ``send-keys`` (several keys in one
command arrive in one read, as a fast typist's or a pasting terminal's do), a bracketed paste by
``paste-buffer -p`` right after Tab, and a busy-looping process beside it for the whole test (bounded
by ``timeout``). What each field got is read back from the answers Ctrl+S saves.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.helpers.tmux import GPU_WIZARD, Tmux, needs_tmux, next_step

pytestmark = [needs_tmux, pytest.mark.slow]

#: The longest the CPU hog may live, whatever happens to the test.
HOG_S = 150
#: Pauses between single keys: the speeds issue 28 measured losses at.
KEY_PAUSES_S = (0.015, 0.03)


def hog() -> subprocess.Popen[bytes]:
    """One process spinning a CPU (the machine has two): the app's loop turns get preempted.

    The spinner ends itself after :data:`HOG_S` (a ``timeout`` wrapper killed by the test left it running).
    """
    spin = f"import time\nend = time.monotonic() + {HOG_S}\nwhile time.monotonic() < end: pass"
    return subprocess.Popen([sys.executable, "-c", spin])


def saved_driver(tmux: Tmux, home: Path) -> dict[str, Any]:
    """Ctrl+S, then the ``driver`` answers as written to the answers file."""
    answers = home / ".config" / "gpu-wizard" / "answers.yaml"
    answers.unlink(missing_ok=True)
    tmux.keys("C-s")
    deadline = time.monotonic() + 20
    while not answers.is_file():
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.1)
    driver: dict[str, Any] = YAML(typ="safe", pure=True).load(answers.read_text())["driver"]
    return driver


def burst(tmux: Tmux, *args: str) -> None:
    """One tmux command line (``;`` separates commands): every key in it reaches the app in one read."""
    tmux._tmux(*args)


def test_bursts_pastes_and_quick_typing_beside_a_cpu_hog_land_in_the_focused_field(tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, [str(GPU_WIZARD), "--demo", "ubuntu-upstream"])
    spinner = hog()
    try:
        tmux.wait_for("✓ operator", timeout=90)
        next_step(tmux, "2/8 Nodes")
        tmux.wait_for("● live", timeout=60)
        next_step(tmux, "3/8 Mode")
        next_step(tmux, "4/8 Driver")
        tmux.wait_for("Driver version")
        time.sleep(1.5)  # the version field takes the focus once the step is up
        # fields in Tab order: version, source, "Cluster pulls from", image name, pull secrets
        # the version field holds the release's default driver: cleared first (Home, Ctrl+K)
        burst(tmux, "send-keys", "-t", "walk", "Home", "C-k", "580.126.20", "Tab", "Tab", "Tab", "Tab", "regcred")
        burst(tmux, "set-buffer", "-b", "secret", ",site-pull", ";", "send-keys", "-t", "walk", "BTab", "Tab", "End")
        burst(tmux, "paste-buffer", "-p", "-d", "-b", "secret", "-t", "walk")
        for pause in KEY_PAUSES_S:  # Shift+Tab (BTab) to the image name and back, then one key at a time
            burst(tmux, "send-keys", "-t", "walk", "BTab", "End", "-", "x", "Tab", "End", ",")
            for char in f"k{int(pause * 1000)}":
                tmux.type(char)
                time.sleep(pause)
        time.sleep(1)
        driver = saved_driver(tmux, tmp_path / "home")
        assert driver.get("version") == "580.126.20", driver
        assert driver.get("image") == "driver-x-x", driver
        assert driver.get("imagePullSecrets") == ["regcred", "site-pull", "k15", "k30"], driver
        assert "nvcr.io" in driver.get("repository", ""), driver
    finally:
        spinner.kill()
        spinner.wait()
        tmux.close()
