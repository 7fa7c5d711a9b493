"""A quick local run of ``tests/hostile_cases_verify.py`` (the catalogue runner runs them all too).

Each case is a subprocess of the real CLI: the exit code, the texts it must show, no traceback and
no control character (other than newline) in its output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile import HostileCase
from tests.hostile_cases_verify import CASES

ROOT = Path(__file__).resolve().parent.parent
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_case(case: HostileCase, tmp_path: Path) -> None:
    for name, content in case.files.items():
        target = tmp_path / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    argv = [arg.replace("{dir}", str(tmp_path)) for arg in case.argv]
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), **case.env}
    env.pop("KUBECONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "wizard", *argv], capture_output=True, text=True, timeout=30, env=env, cwd=tmp_path
    )
    output = done.stdout + done.stderr
    assert done.returncode == case.expect_exit, output
    assert "Traceback" not in output and not CONTROL.search(output), repr(output)
    for text in case.stderr_has:
        assert text in done.stderr, done.stderr
    for text in case.stdout_has:
        assert text in done.stdout, done.stdout
    for text in case.stdout_lacks:
        assert text not in done.stdout, done.stdout
