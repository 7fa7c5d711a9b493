"""The h1 hostile cases (``tests/hostile_cases_apply.py``) run in-process: quick, for this area alone.

The catalogue runner runs the same cases as subprocesses with time and memory bounds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.hostile import HostileCase
from tests.hostile_cases_apply import CASES
from wizard.cli.main import main

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_backup_is_refused_with_one_line(
    case: HostileCase, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, content in case.files.items():
        target = tmp_path / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    code = main([arg.replace("{dir}", str(tmp_path)) for arg in case.argv])
    out, err = capsys.readouterr()
    assert code == case.expect_exit, err
    assert all(text in err for text in case.stderr_has), err
    assert "Traceback" not in err and not CONTROL.search(out + err)
    assert err.startswith("gpu-wizard: error: ") and len(err.splitlines()) <= 2
