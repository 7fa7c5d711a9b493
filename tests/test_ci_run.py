"""``.ci/run`` keeps what a failing run leaves, and fails when tests fail or none ran (issue 28, item 2).

Each test copies ``.ci/run`` and ``.ci/failures.py`` into a temporary folder (the script works in
the folder above its own, so nothing lands in the checkout) and runs it with ``CI_TEST_COMMAND``
set to pytest on a one-file suite that passes, fails, or holds no test.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ci(tmp_path: Path, suite: str, then: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / ".ci").mkdir()
    for name in ("run", "failures.py"):
        shutil.copy2(ROOT / ".ci" / name, tmp_path / ".ci" / name)
    (tmp_path / "test_sample.py").write_text(suite)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["CI_TEST_COMMAND"] = f"{sys.executable} -m pytest -q -p no:cacheprovider test_sample.py"
    if then:  # a second suite after the first, as `make test` runs the real-cluster lane (its own JUnit XML)
        env["CI_TEST_COMMAND"] = f"env -u PYTEST_ADDOPTS {then}; s=$?; {env['CI_TEST_COMMAND']} && exit $s"
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_failing_run_exits_non_zero_prints_the_failure_last_and_keeps_its_log_and_xml(tmp_path: Path) -> None:
    done = _ci(tmp_path, "def test_ok():\n    pass\n\ndef test_broken():\n    assert 1 + 1 == 3, 'arithmetic-is-off'\n")
    assert done.returncode != 0
    tail = done.stdout[done.stdout.rindex("===== FAILURE") :]
    assert "test_sample::test_broken" in tail and "arithmetic-is-off" in tail and "E       AssertionError" in tail
    assert "ci: 2 tests, 1 failed" in tail and "ci: FAILED" in tail
    (kept,) = (tmp_path / ".ci" / "failed").iterdir()
    assert "arithmetic-is-off" in (kept / "pytest.log").read_text()
    assert 'name="test_broken"' in (kept / "junit.xml").read_text()


def test_a_run_without_tests_fails(tmp_path: Path) -> None:
    done = _ci(tmp_path, "# no test here\n")
    assert done.returncode != 0
    assert "no tests ran" in done.stdout and "ci: FAILED (exit 5)" in done.stdout


def test_a_green_run_passes_and_keeps_nothing_as_failed(tmp_path: Path) -> None:
    done = _ci(tmp_path, "def test_ok():\n    pass\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ci: 1 tests, 0 failed, 0 errors, 0 skipped; exit 0" in done.stdout
    assert (tmp_path / ".ci" / "last-run" / "junit.xml").is_file()
    assert not (tmp_path / ".ci" / "failed").exists()


def test_the_real_cluster_lane_s_failures_are_counted_and_printed_too(tmp_path: Path) -> None:
    """``make test`` writes the lane's JUnit XML beside the main suite's (junit-realcluster.xml)."""
    lane = 'def test_lane_flow():\n    assert False, "lane-broke"\n'
    (tmp_path / "test_lane.py").write_text(lane)
    xml = "$PWD/.ci/last-run/junit-realcluster.xml"
    done = _ci(
        tmp_path,
        "def test_ok():\n    pass\n",
        then=f"{sys.executable} -m pytest -q -p no:cacheprovider --junitxml={xml} test_lane.py",
    )
    assert done.returncode != 0
    tail = done.stdout[done.stdout.rindex("===== FAILURE") :]
    assert "test_lane::test_lane_flow" in tail and "lane-broke" in tail
    assert "ci: 2 tests, 1 failed" in tail and "ci: FAILED" in tail
