"""The wizard's CLI run in-process by a test: ``gpu-wizard ARGV`` as (exit code, stdout, stderr)."""

from __future__ import annotations

import pytest

from wizard.cli.main import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``gpu-wizard ARGV`` in-process; what it printed is read from ``capsys`` (and cleared)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
