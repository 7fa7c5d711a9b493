"""Verification benchmark: ``Cluster.verify()`` of 1,000 GPU nodes with 50 ms of simulated exec latency.

The ``large`` demo scenario cut to 1,000 GPU nodes (250 per kernel) with ``faults.exec_latency_ms: 50``,
an upstream driver applied and rolled out, then verified with the default concurrency (16 nodes at
once). As on a real cluster, ``nvidia-driver-ctr`` has no host root, so each node runs ``nvidia-smi``
in the driver container and its host path checks in a probe pod, side by side: the probe pod is
created, seen running one poll later at the earliest, exec'd into and deleted. The ideal is
``nodes / concurrency × (latency + probe poll)``: one exec round plus one poll interval per node.
Target: ≤ 1.3 × ideal, peak RSS ≤ 250 MB. The demo server runs in its own process.

    .venv/bin/python benchmarks/verification.py [--nodes 1000] [--concurrency 16] [--latency-ms 50] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import Served, large_scenario, machine, peak_rss_mb, served

TARGET = 1.3


def probe_poll_s() -> float:
    """How often a probe pod is polled until it runs (``ProbePod``'s default)."""
    import inspect

    from wizard.cluster.probe import ProbePod

    return float(inspect.signature(ProbePod).parameters["poll"].default)


def scenario_file(folder: Path, nodes: int, latency_ms: int) -> Path:
    """The ``large`` scenario with ``nodes`` GPU nodes spread over its kernels and the exec latency fault."""
    return large_scenario(folder, nodes, lambda data: data.update(faults={"exec_latency_ms": latency_ms}))


async def settle(server: Served, limit: float = 120.0) -> None:
    """Wait until the simulation behind the server has finished reacting (its CPU is idle for a second)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = server.cpu_seconds()
        await asyncio.sleep(1.0)
        if server.cpu_seconds() - before < 0.05:
            return


async def measure(server: Served, concurrency: int) -> dict[str, float]:
    from wizard.cluster.facade import Cluster
    from wizard.engine.plan import Plan
    from wizard.engine.render import render
    from wizard.engine.results import Check

    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}}
    )
    async with await Cluster.connect(kubeconfig=str(server.kubeconfig), timeout=60) as cluster:
        start = time.perf_counter()
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        with tempfile.TemporaryDirectory() as backups:
            await cluster.apply(prepared, backup_dir=backups)
        async with contextlib.aclosing(cluster.rollout(plan, interval=0.5, timeout=600)) as rollout:
            async for status in rollout:
                final = status
        rollout_s = time.perf_counter() - start
        if final.phase != "ready":
            raise SystemExit(f"rollout did not get ready: {final.message}")
        await settle(server)
        start, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu_seconds()
        stream = cluster.verify(plan, concurrency=concurrency, timeout=60)
        checks = [item async for item in stream if isinstance(item, Check)]
        verify_s, verify_cpu = time.perf_counter() - start, time.process_time() - cpu
        server_cpu = server.cpu_seconds() - server_cpu
    failed = [c.line() for c in checks if not c.ok]
    if failed:
        raise SystemExit("verification failed:\n" + "\n".join(failed[:10]))
    return {
        "rollout_s": rollout_s,
        "verify_s": verify_s,
        "verify_cpu_s": verify_cpu,
        "server_cpu_s": server_cpu,
        "checks": len(checks),
    }


def run(args: argparse.Namespace, script: Path | None) -> dict[str, float]:
    """One fresh demo server, one apply + rollout, one timed verification."""
    with tempfile.TemporaryDirectory() as tmp:
        scenario = str(scenario_file(Path(tmp), args.nodes, args.latency_ms))
        with served(scenario, script=script) as server:
            return asyncio.run(measure(server, args.concurrency))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    ideal = args.nodes / args.concurrency * (args.latency_ms / 1000 + probe_poll_s())
    servers: dict[str, Path | None] = {"demo server": None}
    runs = {name: run(args, script) for name, script in servers.items()}
    result: dict[str, object] = {
        "machine": machine(),
        "nodes": args.nodes,
        "concurrency": args.concurrency,
        "exec_latency_ms": args.latency_ms,
        "probe_poll_s": probe_poll_s(),
        "ideal_s": round(ideal, 3),
        "runs": {
            name: {
                "checks": int(m["checks"]),
                "rollout_s": round(m["rollout_s"], 2),
                "verify_s": round(m["verify_s"], 3),
                "verify_vs_ideal": round(m["verify_s"] / ideal, 2),
                "client_cpu_s": round(m["verify_cpu_s"], 2),
                "server_cpu_s": round(m["server_cpu_s"], 2),
            }
            for name, m in runs.items()
        },
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.nodes} GPU nodes, concurrency {args.concurrency}, exec latency {args.latency_ms} ms, "
            f"probe poll {probe_poll_s():g}s: ideal {ideal:.3f}s"
        )
        for name, r in result["runs"].items():  # type: ignore[attr-defined]
            print(
                f"{name}: verify {r['verify_s']}s for {r['checks']} checks = {r['verify_vs_ideal']} × ideal "
                f"(target <= {TARGET}); CPU during verify: client {r['client_cpu_s']}s, demo server {r['server_cpu_s']}s; "
                f"apply + rollout {r['rollout_s']}s"
            )
        print(f"peak RSS of this process: {result['peak_rss_mb']} MiB (target <= 250 MB); machine: {result['machine']}")
    best = min(m["verify_s"] / ideal for m in runs.values())
    return 0 if best <= TARGET and peak_rss_mb() <= 238 else 1


if __name__ == "__main__":
    sys.exit(main())
