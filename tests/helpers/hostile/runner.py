"""Runs the hostile-input catalogue: every ``CASES`` entry of ``tests/helpers/hostile/cases_*.py`` as a real CLI process.

Used by ``tests/test_hostile_catalog.py`` (which fails on any broken bound or message) and by
``benchmarks/reliability.py`` (which writes the *hostile input* table of ``docs/reliability.md``).
Each case runs as ``python -m wizard ARGV`` (through ``runpy``, after setting RLIMIT_AS) in its own temporary folder (its files written there,
``HOME`` pointed inside it so nothing lands in the real state folder), with stdin closed to a
``/dev/null`` that is no terminal, under an address-space limit so that a runaway case fails
instead of taking the machine down. Its peak RSS is its own ``VmHWM`` (see ``_LIMITED_MAIN``).

Time is bounded in two ways that a loaded machine cannot stretch, so a case is never skipped: its CPU
time, and its *unloaded* wall time, its own wall time less what its main thread spent waiting for a
CPU (``run_delay`` of ``/proc/self/schedstat``, written as it exits): on an idle machine the two wall
times are equal, and a case that blocks (a read that never ends, a sleep) is caught by the second.
A case still running after ``KILL_AFTER`` is killed and fails.
"""

from __future__ import annotations

import importlib
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.hostile.case import HostileCase, write_files

ROOT = Path(__file__).resolve().parents[3]
MAX_SECONDS = 2.0
MAX_RSS_MB = 200.0
ADDRESS_SPACE_LIMIT = 4 << 30
"""RLIMIT_AS for a case: far above what 200 MB of RSS needs (Python maps much more than it touches),
low enough that a billion-laughs expansion dies with MemoryError instead of swapping the machine."""
KILL_AFTER = 20.0
"""A case still running after this is killed (and fails: it hung)."""
# C0 and C1 controls and DEL, except newline and tab.
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class CaseResult:
    """What one case did: exit code, output, wall time and the child's peak RSS."""

    case: HostileCase
    module: str
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float
    peak_rss_mb: float
    cpu_wait_seconds: float = 0.0
    """What the child's main thread spent runnable but waiting for a CPU (the machine's load)."""
    alive_seconds: float = 0.0
    """The child's own wall time, from its start to its exit (``seconds`` also counts the parent's delays)."""

    @property
    def unloaded_seconds(self) -> float:
        """The child's wall time less its wait for a CPU: what the case would take on an idle machine."""
        return max(self.alive_seconds - self.cpu_wait_seconds, self.cpu_seconds)

    @property
    def message(self) -> str:
        """The first line the user saw (stderr first), for the table."""
        for line in (self.stderr + "\n" + self.stdout).splitlines():
            if line.strip():
                return line.strip()
        return ""


def collect_cases() -> list[tuple[str, HostileCase]]:
    """``(module name, case)`` for every case of every ``tests/helpers/hostile/cases_*.py``, in file order."""
    found: list[tuple[str, HostileCase]] = []
    for path in sorted(Path(__file__).resolve().parent.glob("cases_*.py")):
        module = importlib.import_module(f"tests.helpers.hostile.{path.stem}")
        for case in getattr(module, "CASES", []):
            found.append((path.stem.removeprefix("cases_"), case))
    names = [f"{area}/{case.name}" for area, case in found]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"hostile cases with the same name: {', '.join(sorted(duplicates))}")
    return found


# The child sets its own limit before loading anything: a preexec_fn would run between fork and
# exec, which is unsafe while the pool's other threads hold locks.
# Its peak RSS is its own VmHWM, written on the way out: the kernel's ru_maxrss of a child also
# counts the parent's resident memory at the fork (exec keeps the high-water mark), and a pytest-xdist
# worker is a few hundred MB. Beside it, the nanoseconds its main thread waited for a CPU and the seconds
# it has been alive (from its start time in /proc/self/stat: the parent's own clock would also count the
# parent's waits for a CPU, a fork of a large pytest worker, and how late the parent notices the exit).
_LIMITED_MAIN = f"""
import os, resource, runpy, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_LIMIT}, {ADDRESS_SPACE_LIMIT}))
sys.argv[0] = 'gpu-wizard'
try:
    runpy.run_module('wizard', run_name='__main__', alter_sys=True)
finally:
    with open('/proc/self/status') as status, open(os.environ['HOSTILE_PEAK_FILE'], 'w') as peak:
        peak.write(next(line.split()[1] for line in status if line.startswith('VmHWM:')))
        try:
            with open('/proc/self/schedstat') as schedstat, open('/proc/self/stat') as stat:
                started = int(stat.read().rpartition(')')[2].split()[19]) / os.sysconf('SC_CLK_TCK')
                alive = time.clock_gettime(time.CLOCK_BOOTTIME) - started
                peak.write(' ' + schedstat.read().split()[1] + ' ' + format(alive, '.3f'))
        except (OSError, ValueError, IndexError):
            pass
"""


def run_case(area: str, case: HostileCase) -> CaseResult:
    """Run one case as a child process and measure it."""
    with tempfile.TemporaryDirectory(prefix="gpu-wizard-hostile-") as folder:
        write_files(folder, case.files)
        argv = [arg.replace("{dir}", folder) for arg in case.argv]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("KUBECONFIG", "PYTEST", "COV_"))},
            "HOME": folder,
            "XDG_STATE_HOME": f"{folder}/.state",
            "XDG_CONFIG_HOME": f"{folder}/.config",
            "PYTHONPATH": str(ROOT),
            "NO_COLOR": "1",
            "HOSTILE_PEAK_FILE": f"{folder}/.peak-rss-kb",
            **case.env,
        }
        started = time.monotonic()
        child = subprocess.Popen(
            [sys.executable, "-c", _LIMITED_MAIN, *argv],
            cwd=folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = _read_all(child, started)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        peak_file = Path(folder) / ".peak-rss-kb"
        # no file: the child died before its finally (killed): the kernel's figure, an upper bound
        figures = peak_file.read_text().split() if peak_file.exists() else [str(usage.ru_maxrss)]
        peak_kb = int(figures[0])
        wait_ns, alive = (int(figures[1]), float(figures[2])) if len(figures) > 2 else (0, seconds)
    return CaseResult(
        case=case,
        module=area,
        exit_code=child.returncode,
        stdout=out.decode("utf-8", "backslashreplace").replace(folder, "{dir}"),
        stderr=err.decode("utf-8", "backslashreplace").replace(folder, "{dir}"),
        seconds=seconds,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=peak_kb / 1024,  # kilobytes on Linux
        cpu_wait_seconds=wait_ns / 1e9,
        alive_seconds=alive,
    )


def _read_all(child: subprocess.Popen[bytes], started: float) -> tuple[bytes, bytes]:
    """Both pipes to the end (without ``communicate``, which would reap the child before wait4)."""
    assert child.stdout is not None and child.stderr is not None
    out_fd, err_fd = child.stdout.fileno(), child.stderr.fileno()
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    with selectors.DefaultSelector() as selector:
        selector.register(out_fd, selectors.EVENT_READ)
        selector.register(err_fd, selectors.EVENT_READ)
        while selector.get_map():
            if time.monotonic() - started > KILL_AFTER:
                child.kill()
            for key, _ in selector.select(timeout=1.0):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    child.stdout.close()
    child.stderr.close()
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd])


def problems(result: CaseResult) -> list[str]:
    """What the case did wrong (empty: all good), each as one sentence."""
    case, found = result.case, []
    both = result.stdout + result.stderr
    if result.exit_code != case.expect_exit:
        found.append(f"exit {result.exit_code}, expected {case.expect_exit}")
    for text in case.stderr_has:
        if text not in result.stderr:
            found.append(f"stderr lacks {text!r}")
    for text in case.stdout_has:
        if text not in result.stdout:
            found.append(f"stdout lacks {text!r}")
    for text in case.stdout_lacks:
        if text in result.stdout:
            found.append(f"stdout has {text!r}")
    if "Traceback" in both:
        found.append("a traceback reached the output")
    control = CONTROL_CHARACTER.search(both)
    if control:
        found.append(f"a control character {control.group()!r} reached the output")
    if result.seconds >= KILL_AFTER:
        found.append(f"still running after {KILL_AFTER:g} s: killed")
    if result.cpu_seconds > MAX_SECONDS:
        found.append(f"used {result.cpu_seconds:.2f} s of CPU (bound {MAX_SECONDS:g} s)")
    if result.unloaded_seconds > MAX_SECONDS:
        found.append(
            f"took {result.unloaded_seconds:.2f} s not counting {result.cpu_wait_seconds:.2f} s waiting for a CPU "
            f"(bound {MAX_SECONDS:g} s)"
        )
    if result.peak_rss_mb > MAX_RSS_MB:
        found.append(f"peak RSS {result.peak_rss_mb:.0f} MB (bound {MAX_RSS_MB:g} MB)")
    return found
