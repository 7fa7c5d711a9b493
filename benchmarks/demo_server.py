"""Run a demo cluster in its own process for the cluster benchmarks (so it never shares the client's GIL).

``served(scenario)`` starts ``gpu-wizard demo serve`` on a free port with ``--step-delay 0`` and
yields the kubeconfig path once the API answers; the process is stopped by its PID afterwards.
Also: the machine description every benchmark prints, and the process's peak RSS.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Served:
    """A demo cluster running in a child process."""

    kubeconfig: Path
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server process has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def served(
    scenario: str, *, script: Path | None = None, startup_timeout: float = 120.0, pod_start_latency: float = 0.0
) -> Iterator[Served]:
    """A demo cluster serving ``scenario`` (name or YAML path) in a child process (``script``: another entry point;
    ``pod_start_latency``: seconds from a pod's binding to its sandbox, 0 unless a benchmark measures it)."""
    with tempfile.TemporaryDirectory(prefix="gpu-wizard-bench-") as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        log = open(Path(tmp) / "server.log", "w+")  # noqa: SIM115 (closed below, after the child)
        code = "import sys; from wizard.demo.serve import main; sys.exit(main(sys.argv[1:]))"
        entry = [str(script)] if script else ["-c", code]
        argv = [sys.executable, *entry, "--scenario", scenario, "--port", "0", "--step-delay", "0"]
        argv += ["--pod-start-latency", str(pod_start_latency)]
        proc = subprocess.Popen(
            [*argv, "--kubeconfig", str(kubeconfig)], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while "API server:" not in Path(log.name).read_text():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the demo server did not start:\n{Path(log.name).read_text()}")
                time.sleep(0.05)
            yield Served(kubeconfig, proc.pid)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def server_of(kubeconfig: Path) -> tuple[str, str, str]:
    """(server URL, bearer token, CA file) from a demo (or real-server lane) kubeconfig."""
    from ruamel.yaml import YAML

    data = YAML(typ="safe", pure=True).load(kubeconfig.read_text())
    cluster = data["clusters"][0]["cluster"]
    ca = ""
    if cluster.get("certificate-authority-data"):
        import base64

        path = kubeconfig.with_suffix(".ca.pem")
        path.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        ca = str(path)
    elif cluster.get("certificate-authority"):  # the real-server lane's kubeconfigs name the CA file
        ca = str(cluster["certificate-authority"])
    return cluster["server"], data["users"][0]["user"]["token"], ca


def machine() -> dict[str, str]:
    """nproc, CPU model and Python version of this machine."""
    model = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": platform.python_version()}


def cpu_ticks() -> tuple[int, int]:
    """The machine's CPU time so far as (stolen, all) clock ticks from /proc/stat; (0, 0) where unreadable.

    Stolen time is what the hypervisor gave other guests while this VM wanted a core: on a shared host it
    comes and goes (0 to 27 % within one run here), and every wall time measured meanwhile stretches with it.
    """
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return fields[7], sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return 0, 0


def steal_pct(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the machine's CPU time stolen between two :func:`cpu_ticks` readings, in percent."""
    total = after[1] - before[1]
    return round(100 * (after[0] - before[0]) / total, 1) if total > 0 else 0.0


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (``VmHWM``).

    Not ``ru_maxrss``: Linux keeps that across fork+exec, so a child started by a big parent would
    report the parent's peak.
    """
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def large_scenario(folder: Path, nodes: int, change: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """The ``large`` scenario cut to ``nodes`` GPU nodes spread over its kernels, ``change``d, as a file in ``folder``."""
    from ruamel.yaml import YAML

    from wizard.bundled import asset_text

    yaml = YAML(typ="safe", pure=True)
    data = yaml.load(asset_text("scenarios", "large.yaml"))
    gpu = [n for n in data["nodes"] if n.get("gpu_count")]
    for index, node in enumerate(gpu):
        node["count"] = nodes // len(gpu) + (1 if index < nodes % len(gpu) else 0)
    data["name"] = f"large-{nodes}"
    if change is not None:
        change(data)
    path = folder / "scenario.yaml"
    with path.open("w") as handle:
        yaml.dump(data, handle)
    return path
