"""The checkout's wheel, built offline for the packaging and installed-tool tests."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(out: Path) -> Path:
    """The checkout's wheel, built into ``out`` (no dependencies, no build isolation: offline)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = out.glob("gpu_wizard-*.whl")
    return wheel
