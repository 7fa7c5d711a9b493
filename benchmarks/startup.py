"""Start-up benchmark: time to the wizard's first frame, as a ratio to a bare Textual app.

Each app is started in a pseudo-terminal (80×24, ``TERM=xterm-256color``), exactly as a user
would start it, and timed from ``fork`` until its first frame's text reaches the terminal; then it
is killed. The bare app is ``App`` with one ``Static``. The target is a ratio of at most 1.2: the
wizard imports only Textual before its first frame and loads the engine (pydantic, the Kubernetes
client, aiohttp) afterwards.

    .venv/bin/python benchmarks/startup.py [--runs 7] [--json]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.2

BARE_APP = """
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("bare-ready")

Bare().run()
"""

#: What is started: the ``gpu-wizard`` entry point as users run it, the installed console script
#: itself (``script``: the same interpreter's ``bin/gpu-wizard``), or the Textual app alone.
ENTRIES = {
    "cli": "import sys; from wizard.launch import main; sys.exit(main([]))",
    "script": "",
    "app": "from screens.app import WizardApp; WizardApp().run()",
}
CONSOLE_SCRIPT = Path(sys.executable).parent / "gpu-wizard"


def first_frame_seconds(code: str, marker: bytes, env: dict[str, str], timeout: float = 20.0) -> float:
    """Seconds from fork until ``marker`` appears on the pseudo-terminal."""
    return first_frame(code, marker, env, timeout)[0]


def first_frame(code: str, marker: bytes, env: dict[str, str], timeout: float = 20.0) -> tuple[float, float]:
    """(wall seconds from fork until ``marker`` appears on the pseudo-terminal, the child's CPU seconds by then).

    The CPU seconds (user + system, read when the child is killed right after its first frame) hardly
    depend on what else the machine runs; the wall time does.
    """
    started = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # child: become the app
        os.chdir(ROOT)
        if code:
            os.execve(sys.executable, [sys.executable, "-c", code], env)
        os.execve(CONSOLE_SCRIPT, [str(CONSOLE_SCRIPT)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    seen = b""
    try:
        while True:
            remaining = timeout - (time.perf_counter() - started)
            if remaining <= 0:
                raise TimeoutError(f"no first frame within {timeout}s; output so far: {seen[-400:]!r}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                raise RuntimeError(f"the app exited before its first frame: {seen[-800:]!r}") from None
            if not chunk:
                raise RuntimeError(f"the app exited before its first frame: {seen[-800:]!r}")
            seen += chunk
            if marker in seen:
                wall = time.perf_counter() - started
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        _, _, usage = os.wait4(pid, 0)
        os.close(fd)
    return wall, usage.ru_utime + usage.ru_stime


def measure(runs: int, entry: str = "cli") -> dict[str, float]:
    """Median first-frame times of the bare app and the wizard, and their ratio."""
    wizard_app = ENTRIES[entry]
    with tempfile.TemporaryDirectory() as home:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": home,
            "TERM": "xterm-256color",
            "COLUMNS": "80",
            "LINES": "24",
            "PYTHONPATH": str(ROOT),
        }
        # one untimed start each, so both run with warm file caches and compiled bytecode
        first_frame_seconds(BARE_APP, b"bare-ready", env)
        first_frame_seconds(wizard_app, b"1/8 Connect", env)
        bare, wizard, bare_cpu, wizard_cpu = [], [], [], []
        for _ in range(runs):
            wall, cpu = first_frame(BARE_APP, b"bare-ready", env)
            bare.append(wall)
            bare_cpu.append(cpu)
            wall, cpu = first_frame(wizard_app, b"1/8 Connect", env)
            wizard.append(wall)
            wizard_cpu.append(cpu)
    bare_s, wizard_s = statistics.median(bare), statistics.median(wizard)
    cpu_bare, cpu_wizard = statistics.median(bare_cpu), statistics.median(wizard_cpu)
    return {
        "bare_s": round(bare_s, 4),
        "wizard_s": round(wizard_s, 4),
        "ratio": round(wizard_s / bare_s, 3),
        "bare_cpu_s": round(cpu_bare, 4),
        "wizard_cpu_s": round(cpu_wizard, 4),
        "cpu_ratio": round(cpu_wizard / cpu_bare, 3),
        "load_average": round(os.getloadavg()[0], 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed starts of each app (median is reported)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--entry",
        choices=sorted(ENTRIES),
        default="cli",
        help="cli: the gpu-wizard entry point (default); script: the installed console script; app: screens.app alone",
    )
    args = parser.parse_args(argv)
    result: dict[str, object] = dict(measure(args.runs, args.entry))
    result["entry"] = args.entry
    result["target"] = TARGET_RATIO
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"first frame: bare Textual {float(result['bare_s']) * 1000:.0f} ms, gpu-wizard ({args.entry}) "
            f"{float(result['wizard_s']) * 1000:.0f} ms, ratio {float(result['ratio']):.2f} (target ≤ {TARGET_RATIO})"
        )
        print(
            f"CPU to the first frame: bare {float(result['bare_cpu_s']) * 1000:.0f} ms, gpu-wizard "
            f"{float(result['wizard_cpu_s']) * 1000:.0f} ms, ratio {float(result['cpu_ratio']):.2f}; "
            f"load average {result['load_average']}"
        )
    return 0 if float(result["ratio"]) <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
