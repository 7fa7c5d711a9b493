"""Many clusters in one run (issue 36, item 4): ``gpu-wizard verify --all-contexts`` on 10 demo clusters against
each cluster verified alone.

``--clusters`` demo clusters (default 10, scenario ``sle-micro-precompiled``: two GPU nodes each) run each in its
own process (``benchmarks/demo_server.py``) with a pod start latency (``--pod-start-latency``, 2 s: binding to
sandbox, as on a real node; the verification's host probe waits for its pods). Each gets the precompiled plan
applied and rolled out; one kubeconfig holds a context per cluster. Then, ``--runs`` times:

* **alone**: ``gpu-wizard verify --context C`` for every cluster, one after the other, each a new process as a
  user or a CI job runs it; the slowest and the sum are kept;
* **fleet**: ``gpu-wizard verify --all-contexts`` in one process (clusters concurrently, one summary).

The client's CPU seconds of each (``RUSAGE_CHILDREN``) say whether the one process waited for the clusters or
for a core.

Target: the fleet run in about the time of the slowest cluster alone (fleet / slowest ≤ 1.5 on a shared
2-core machine; ideal 1.0), and well under the sum. Every run must verify every cluster (exit 0): a faster
run that verified less would not count. Prints the medians and, with ``--json``, every run.

    .venv/bin/python benchmarks/fleet.py [--clusters 10] [--runs 3] [--pod-start-latency 2] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import ROOT, cpu_ticks, machine, served, steal_pct

SCENARIO = "sle-micro-precompiled"
ANSWERS = (
    "version: 1\nmode: precompiled\n"
    "driver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n  source: docker.io/alaudadockerhub\n"
)
TARGET = 1.5


def gpu_wizard(*argv: str, timeout: float = 600) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """``gpu-wizard ARGV`` as a new process: (wall seconds, its CPU seconds, the finished process)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "wizard", *argv], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime), done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pod-start-latency", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from tests.helpers.cluster import fleet_kubeconfig

    with tempfile.TemporaryDirectory(prefix="gpu-wizard-fleet-") as tmp, contextlib.ExitStack() as stack:
        folder = Path(tmp)
        answers = folder / "answers.yaml"
        answers.write_text(ANSWERS)
        started = time.monotonic()
        servers = {
            f"c{i:02d}": stack.enter_context(served(SCENARIO, pod_start_latency=args.pod_start_latency))
            for i in range(args.clusters)
        }
        print(f"{len(servers)} demo clusters up in {time.monotonic() - started:.1f} s", file=sys.stderr)
        kube = fleet_kubeconfig(folder / "kubeconfig", {name: s.kubeconfig for name, s in servers.items()})
        apply = [sys.executable, "-m", "wizard", "apply", "--answers", str(answers), "--kubeconfig", str(kube)]
        installs = [
            subprocess.Popen(
                [*apply, "--context", name, "--yes", "--backup-dir", str(folder / "backups")],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                cwd=ROOT,
            )
            for name in servers
        ]
        for name, proc in zip(servers, installs, strict=True):
            _, err = proc.communicate(timeout=600)
            if proc.returncode != 0:
                raise SystemExit(f"apply on {name} failed (exit {proc.returncode}):\n{err}")
        print(f"installed and rolled out in {time.monotonic() - started:.1f} s", file=sys.stderr)
        verify = ["verify", "--kubeconfig", str(kube)]
        runs = []
        for number in range(args.runs):
            ticks = cpu_ticks()
            alone: dict[str, float] = {}
            alone_cpu = 0.0
            for name in servers:
                seconds, cpu, done = gpu_wizard(*verify, "--context", name)
                alone_cpu += cpu
                if done.returncode != 0:
                    raise SystemExit(f"verify on {name} alone: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
                alone[name] = seconds
            seconds, fleet_cpu, done = gpu_wizard(*verify, "--all-contexts")
            if done.returncode != 0 or f"{len(servers)} clusters: {len(servers)} ok; exit 0" not in done.stdout:
                raise SystemExit(f"verify --all-contexts: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr}")
            run = {
                "slowest_alone_s": round(max(alone.values()), 2),
                "median_alone_s": round(statistics.median(alone.values()), 2),
                "sum_alone_s": round(sum(alone.values()), 2),
                "fleet_s": round(seconds, 2),
                "alone_client_cpu_s": round(alone_cpu, 2),
                "fleet_client_cpu_s": round(fleet_cpu, 2),
                "steal_pct": steal_pct(ticks, cpu_ticks()),
                "load": round(os.getloadavg()[0], 1),
            }
            run["fleet_per_slowest"] = round(run["fleet_s"] / run["slowest_alone_s"], 2)
            runs.append(run)
            print(f"run {number + 1}: {run}", file=sys.stderr)
    keys = (
        "slowest_alone_s",
        "median_alone_s",
        "sum_alone_s",
        "fleet_s",
        "fleet_per_slowest",
        "alone_client_cpu_s",
        "fleet_client_cpu_s",
        "load",
    )
    median = {key: round(statistics.median(r[key] for r in runs), 2) for key in keys}
    verdict = "✓" if median["fleet_per_slowest"] <= TARGET else "✗"
    print(f"machine: {machine()}")
    print(f"{args.clusters} demo clusters ({SCENARIO}, pod start {args.pod_start_latency} s), median of {len(runs)}:")
    print(
        f"  each alone: slowest {median['slowest_alone_s']} s, median {median['median_alone_s']} s, sum {median['sum_alone_s']} s"
    )
    ratios = ", ".join(f"{r['fleet_per_slowest']}" for r in runs)
    print(
        f"  --all-contexts: {median['fleet_s']} s; fleet / slowest alone, per run: {ratios}, median "
        f"{median['fleet_per_slowest']} (target ≤ {TARGET}) {verdict}; load {median['load']}"
    )
    print(
        f"  client CPU: {median['fleet_client_cpu_s']} s in the one --all-contexts process, "
        f"{median['alone_client_cpu_s']} s in the {args.clusters} processes alone"
    )
    if args.json:
        print(json.dumps({"clusters": args.clusters, "runs": runs, "median": median}, indent=2))
    return 0 if verdict == "✓" else 1


if __name__ == "__main__":
    sys.exit(main())
