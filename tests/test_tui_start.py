"""Starting the TUI: in a terminal it draws its first frame; a scenario typo is refused there too.

The refusals without a terminal are hostile cases (``tests/helpers/hostile/cases_answers.py``); these run
the entry point in a pseudo-terminal, as a user would (``benchmarks/startup.py``'s launcher).
"""

from __future__ import annotations

import os
import tempfile

import pytest

from benchmarks.startup import ROOT, first_frame_seconds


def _env(home: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": home,
        "TERM": "xterm-256color",
        "PYTHONPATH": str(ROOT),
    }


def test_in_a_terminal_the_tui_starts() -> None:
    code = "import sys; from wizard.launch import main; sys.exit(main(['--demo', 'sle-micro-precompiled']))"
    with tempfile.TemporaryDirectory() as home:
        assert first_frame_seconds(code, b"1/8 Connect", _env(home), timeout=60) > 0


def test_in_a_terminal_a_scenario_typo_is_one_line() -> None:
    code = "import sys; from wizard.launch import main; sys.exit(main(['--demo', 'sle-micro']))"
    with tempfile.TemporaryDirectory() as home, pytest.raises(RuntimeError) as exited:
        first_frame_seconds(code, b"1/8 Connect", _env(home), timeout=60)
    said = str(exited.value)
    assert "gpu-wizard: error: --demo: unknown scenario 'sle-micro'; bundled scenarios:" in said
    assert "Traceback" not in said
