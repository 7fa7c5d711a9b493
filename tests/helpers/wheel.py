"""The checkout's wheel, built offline once per run for the packaging and installed-tool tests."""

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(out: Path) -> Path:
    """The checkout's wheel, built into ``out`` (no dependencies, no build isolation: offline); the build may
    warn of nothing (setuptools' "Package would be ignored" is an asset folder a later release leaves out)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    warned = [line.strip() for line in (done.stdout + done.stderr).splitlines() if "Warning" in line]
    assert not warned, f"the wheel's build warned: {warned}"
    (wheel,) = out.glob("gpu_wizard-*.whl")
    return wheel


def shared_wheel(factory: pytest.TempPathFactory) -> Path:
    """The run's one wheel: the first test to ask builds it, under a lock; the others, on any worker, reuse it.

    Two builds of one checkout at once also share its ``build/`` folder, so the lock keeps them apart too.
    """
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, shared by its pytest-xdist workers
    folder = root / "gpu-wizard-wheel"
    with (root / "gpu-wizard-wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = sorted(folder.glob("gpu_wizard-*.whl"))
        if built:
            return built[0]
        folder.mkdir(exist_ok=True)
        return build_wheel(folder)
