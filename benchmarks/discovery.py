"""Discovery benchmark: ``Cluster.discover()`` of the ``large`` demo scenario (5,003 nodes) against two baselines.

* raw: the same paged list (``limit=500`` + ``continue``) with plain aiohttp and ``json.loads``, no
  Kubernetes client and no facts (the floor for anything that reads the nodes);
* kubectl: ``kubectl get nodes -o json`` (a warm discovery cache; it pages by 500 as well).

Targets: discovery ≤ 1.5 × raw and faster than kubectl. The demo server runs in its own process.
Prints one line per measurement, the ratios, and the client's peak RSS.

    .venv/bin/python benchmarks/discovery.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import machine, peak_rss_mb, served, server_of

TARGET_RAW = 1.5


async def raw_list(server: str, token: str, ca: str) -> int:
    """Page through ``/api/v1/nodes`` with aiohttp and decode each page: the count of nodes."""
    import aiohttp

    context = ssl.create_default_context(cafile=ca) if ca else None
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    count, cont = 0, ""
    async with aiohttp.ClientSession(headers=headers) as session:
        while True:
            url = f"{server}/api/v1/nodes?limit=500" + (f"&continue={cont}" if cont else "")
            async with session.get(url, ssl=context if context is not None else True) as resp:
                page = json.loads(await resp.read())
            count += len(page["items"])
            cont = page["metadata"].get("continue") or ""
            if not cont:
                return count


def kubectl_binary() -> str:
    venv = Path(sys.executable).parent / "kubectl"
    return str(venv) if venv.exists() else (shutil.which("kubectl") or "kubectl")


def kubectl_list(kubeconfig: Path, home: str) -> int:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": home}
    out = subprocess.run([kubectl_binary(), "get", "nodes", "-o", "json"], env=env, capture_output=True, check=True)
    return len(json.loads(out.stdout)["items"])


async def measure(kubeconfig: Path, runs: int) -> dict[str, list[float]]:
    from wizard.cluster.facade import Cluster

    server, token, ca = server_of(kubeconfig)
    cluster = await Cluster.connect(kubeconfig=str(kubeconfig), timeout=60)
    home = tempfile.mkdtemp(prefix="kubectl-home-")
    times: dict[str, list[float]] = {"discover": [], "raw": [], "kubectl": []}
    try:
        # Warm-up: imports, connections, kubectl's discovery cache.
        nodes = len((await cluster.discover()).nodes)
        assert await raw_list(server, token, ca) == nodes
        assert kubectl_list(kubeconfig, home) == nodes
        for _ in range(runs):
            start = time.perf_counter()
            facts = await cluster.discover()
            times["discover"].append(time.perf_counter() - start)
            assert len(facts.nodes) == nodes
            start = time.perf_counter()
            await raw_list(server, token, ca)
            times["raw"].append(time.perf_counter() - start)
            start = time.perf_counter()
            kubectl_list(kubeconfig, home)
            times["kubectl"].append(time.perf_counter() - start)
        print(f"nodes: {nodes} ({len(facts.gpu_nodes)} GPU)")
    finally:
        await cluster.close()
        shutil.rmtree(home, ignore_errors=True)
    return times


async def engine_only(kubeconfig: Path, runs: int) -> None:
    """Connect and discover ``runs`` times, nothing else (for the engine's own peak RSS)."""
    from wizard.cluster.facade import Cluster

    async with await Cluster.connect(kubeconfig=str(kubeconfig), timeout=60) as cluster:
        for _ in range(runs):
            await cluster.discover()


def engine_rss(kubeconfig: Path, runs: int) -> float:
    """Peak RSS (MiB) of a fresh process that only runs the engine's discovery."""
    out = subprocess.run(
        [sys.executable, __file__, "--engine-only", str(kubeconfig), "--runs", str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--engine-only", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine_only:
        asyncio.run(engine_only(Path(args.engine_only), args.runs))
        print(round(peak_rss_mb(), 1))
        return 0
    with served("large") as server:
        times = asyncio.run(measure(server.kubeconfig, args.runs))
        engine_peak = engine_rss(server.kubeconfig, args.runs)
    median = {k: statistics.median(v) for k, v in times.items()}
    vs_raw, vs_kubectl = median["discover"] / median["raw"], median["discover"] / median["kubectl"]
    result = {
        "machine": machine(),
        "median_s": {k: round(v, 3) for k, v in median.items()},
        "discover_vs_raw": round(vs_raw, 2),
        "discover_vs_kubectl": round(vs_kubectl, 2),
        "engine_peak_rss_mb": engine_peak,
        "benchmark_process_peak_rss_mb": round(peak_rss_mb(), 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in median.items():
            print(f"{name:9s} median {value:.3f}s  (runs: {', '.join(f'{t:.3f}' for t in times[name])})")
        print(f"discover / raw paged GET + JSON  = {result['discover_vs_raw']}  (target <= {TARGET_RAW})")
        print(f"discover / kubectl get nodes -o json = {result['discover_vs_kubectl']}  (target < 1)")
        print(
            f"peak RSS: engine-only process {engine_peak} MiB (target <= 250 MB = 238 MiB); this process (all three methods) {result['benchmark_process_peak_rss_mb']} MiB"
        )
        print(f"machine: {result['machine']}")
    ok = vs_raw <= TARGET_RAW and vs_kubectl < 1 and engine_peak <= 238  # 250 MB = 238 MiB
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
