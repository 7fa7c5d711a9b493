"""Discovery benchmark: ``Cluster.discover()`` of the ``large`` demo scenario (5,003 nodes) against baselines, in one run.

* gateway: the same paged list (``limit=500`` + ``continue``) through the wizard's own gateway
  (``Gateway.list_nodes_page``: the Kubernetes client's raw call, retry policy, ``json.loads``) and
  nothing else: no facts, no checks (the floor for the engine's discovery: the target is ≤ 1.2 × this);
* node_pages: the same list through ``WatchCache.pages``, discovery's own paging (read-ahead, the
  cyclic collector paused), no facts: what the facts alone add;
* raw: the same paged list with plain aiohttp and ``json.loads``, no Kubernetes client and no facts;
* kubectl: ``kubectl get nodes -o json`` (a warm discovery cache; it pages by 500 as well);
* cli -o json: ``gpu-wizard discover -o json`` end to end in a new process (imports, connect, print).

Wall times stretch with the machine's load; the client's CPU seconds of discover and of the gateway's
fetch (the server runs in another process) are reported too.

Targets: discovery ≤ 1.2 × the gateway's paged fetch and faster than kubectl. The demo server runs in its own process.
Prints one line per measurement, the ratios, the client's peak RSS, and the longest event-loop stall while
``Cluster.discover()`` ran (a loop-lag probe; the TUI's Nodes step runs it on its loop). ``--stalls`` also
prints where the loop was while it was over 50 ms late (``benchmarks/stallwatch.py``; stderr).

    .venv/bin/python benchmarks/discovery.py [--runs 5] [--json] [--in-process] [--stalls]
    .venv/bin/python benchmarks/discovery.py --real 1000,5000 [--runs 5] [--json]

``--real`` runs the same measures on the demo and on a real kube-apiserver holding the same nodes
(kwok; ``benchmarks/realserver.py``), one size after the other, kubectl being the one built with it.
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import machine, peak_rss_mb, served, server_of
from benchmarks.rollout import LoopLag
from benchmarks.stallwatch import StallWatch

TARGET_GATEWAY = 1.2
PAGE_SIZE = 500


async def node_pages_list(cluster: Any) -> int:
    """The same paged fetch as discovery's (``WatchCache.pages``: read-ahead), no facts."""
    from wizard.cluster.core.watchcache import WatchCache

    count = 0
    async for page in WatchCache(cluster.gateway, "nodes", page_size=PAGE_SIZE).pages():
        count += len(page.get("items") or [])
    return count


async def gateway_list(cluster: Any) -> int:
    """Page through the nodes with the wizard's gateway, decoding each page and nothing else."""
    count, cont = 0, None
    while True:
        page = await cluster.gateway.list_nodes_page(limit=PAGE_SIZE, cont=cont)
        count += len(page.get("items") or [])
        cont = (page.get("metadata") or {}).get("continue") or None
        if not cont:
            return count


async def raw_list(server: str, token: str, ca: str) -> int:
    """Page through ``/api/v1/nodes`` with aiohttp and decode each page: the count of nodes."""
    import aiohttp

    context = ssl.create_default_context(cafile=ca) if ca else None
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    count, cont = 0, ""
    async with aiohttp.ClientSession(headers=headers) as session:
        while True:
            url = f"{server}/api/v1/nodes?limit={PAGE_SIZE}" + (f"&continue={cont}" if cont else "")
            async with session.get(url, ssl=context if context is not None else True) as resp:
                page = json.loads(await resp.read())
            count += len(page["items"])
            cont = page["metadata"].get("continue") or ""
            if not cont:
                return count


def kubectl_binary() -> str:
    venv = Path(sys.executable).parent / "kubectl"
    return str(venv) if venv.exists() else (shutil.which("kubectl") or "kubectl")


def kubectl_list(kubeconfig: Path, home: str, kubectl: str = "") -> int:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": home}
    argv = [kubectl or kubectl_binary(), "get", "nodes", "-o", "json"]
    out = subprocess.run(argv, env=env, capture_output=True, check=True)
    return len(json.loads(out.stdout)["items"])


def cli_discover(kubeconfig: Path, home: str) -> int:
    """``gpu-wizard discover -o json`` end to end in a new process (imports, connect, discover, print)."""
    env = {**os.environ, "HOME": home}
    script = Path(sys.executable).parent / "gpu-wizard"
    argv = [str(script), "discover", "-o", "json", "--kubeconfig", str(kubeconfig)]
    out = subprocess.run(argv, env=env, capture_output=True, check=True)
    return len(json.loads(out.stdout)["nodes"])


async def measure(
    kubeconfig: Path, runs: int, in_process: bool = False, stalls: bool = False, kubectl: str = ""
) -> dict[str, list[float]]:
    from wizard.cluster.facade import Cluster

    watch = StallWatch() if stalls else None
    if watch is not None:
        watch.start()
    lag = LoopLag(watch)
    probe = asyncio.create_task(lag.run())

    server, token, ca = server_of(kubeconfig)
    cluster = await Cluster.connect(kubeconfig=str(kubeconfig), timeout=60)
    home = tempfile.mkdtemp(prefix="kubectl-home-")
    times: dict[str, list[float]] = {
        "discover": [],
        "gateway": [],
        "node_pages": [],
        "raw": [],
        "kubectl": [],
        "cli -o json": [],
        "discover cpu": [],  # the client's own CPU seconds (the demo server runs in another process)
        "gateway cpu": [],
        "discover max stall ms": [],
    }
    try:
        # Warm-up: imports, connections, kubectl's discovery cache.
        nodes = len((await cluster.discover()).nodes)
        assert await gateway_list(cluster) == nodes
        assert await node_pages_list(cluster) == nodes
        assert await raw_list(server, token, ca) == nodes
        if not in_process:
            assert kubectl_list(kubeconfig, home, kubectl) == nodes
            assert cli_discover(kubeconfig, home) == nodes
        for _ in range(runs):
            # kubectl and the CLI run blocking (subprocess.run): let the probe wake first, or the seconds it
            # was held by them count as the next phase's stall (they read as 15 s stalls "during discover").
            await asyncio.sleep(0.05)
            lag.max_ms.clear()
            lag.phase = "discover"
            start, cpu = time.perf_counter(), time.process_time()
            facts = await cluster.discover()
            times["discover"].append(time.perf_counter() - start)
            lag.phase = "baselines"
            times["discover max stall ms"].append(lag.max_ms.get("discover", 0.0))
            times["discover cpu"].append(time.process_time() - cpu)
            assert len(facts.nodes) == nodes
            start, cpu = time.perf_counter(), time.process_time()
            await gateway_list(cluster)
            times["gateway"].append(time.perf_counter() - start)
            times["gateway cpu"].append(time.process_time() - cpu)
            start = time.perf_counter()
            await node_pages_list(cluster)
            times["node_pages"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await raw_list(server, token, ca)
            times["raw"].append(time.perf_counter() - start)
            if in_process:
                continue
            start = time.perf_counter()
            kubectl_list(kubeconfig, home, kubectl)
            times["kubectl"].append(time.perf_counter() - start)
            start = time.perf_counter()
            cli_discover(kubeconfig, home)
            times["cli -o json"].append(time.perf_counter() - start)
        print(f"nodes: {nodes} ({len(facts.gpu_nodes)} GPU)")
    finally:
        probe.cancel()
        if watch is not None:
            watch.stop()
            print(watch.report(), file=sys.stderr, flush=True)
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
    parser.add_argument(
        "--in-process", action="store_true", help="only discover, the gateway and raw aiohttp (no kubectl, no CLI)"
    )
    parser.add_argument("--stalls", action="store_true", help="print where the loop stalled during discover (stderr)")
    parser.add_argument("--engine-only", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument(
        "--real",
        metavar="N[,N…]",
        help="the real-server lane: the large scenario cut to N GPU nodes on the demo and on a real kube-apiserver "
        "(kwok nodes), side by side, with the built kubectl",
    )
    args = parser.parse_args()
    if args.engine_only:
        asyncio.run(engine_only(Path(args.engine_only), args.runs))
        print(round(peak_rss_mb(), 1))
        return 0
    if args.real:
        return real_lane([int(n) for n in args.real.split(",")], args.runs, args.json)
    with served("large") as server:
        times = asyncio.run(measure(server.kubeconfig, args.runs, args.in_process, args.stalls))
        stalls_ms = times.pop("discover max stall ms")
        times = {name: values for name, values in times.items() if values}
        engine_peak = engine_rss(server.kubeconfig, args.runs)
    median = {k: statistics.median(v) for k, v in times.items()}
    vs_gateway = median["discover"] / median["gateway"]
    vs_raw = median["discover"] / median["raw"]
    vs_kubectl = median["discover"] / median["kubectl"] if "kubectl" in median else 0.0  # 0: not measured
    result = {
        "machine": machine(),
        "load_average": round(os.getloadavg()[0], 1),
        "median_s": {k: round(v, 3) for k, v in median.items()},
        "discover_vs_gateway": round(vs_gateway, 3),
        "discover_vs_node_pages": round(median["discover"] / median["node_pages"], 3),
        "discover_vs_gateway_client_cpu": round(median["discover cpu"] / median["gateway cpu"], 3),
        "discover_vs_raw": round(vs_raw, 2),
        "discover_vs_kubectl": round(vs_kubectl, 2),
        "discover_max_stall_ms": round(max(stalls_ms)),
        "engine_peak_rss_mb": engine_peak,
        "benchmark_process_peak_rss_mb": round(peak_rss_mb(), 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, value in median.items():
            print(f"{name:15s} median {value:.3f}s  (runs: {', '.join(f'{t:.3f}' for t in times[name])})")
        print(f"discover / gateway paged fetch   = {result['discover_vs_gateway']}  (target <= {TARGET_GATEWAY})")
        print(f"discover / gateway, client CPU    = {result['discover_vs_gateway_client_cpu']}  (load-independent)")
        print(f"discover / node_pages (same path, no facts) = {result['discover_vs_node_pages']}")
        print(f"discover / raw aiohttp GET + JSON = {result['discover_vs_raw']}")
        print(
            f"longest event-loop stall during discover: {result['discover_max_stall_ms']} ms (runs: "
            + ", ".join(f"{ms:.0f}" for ms in stalls_ms)
            + ")"
        )
        print(f"load average: {os.getloadavg()[0]:.1f} (wall times stretch with it)")
        if "kubectl" in median:
            print(f"discover / kubectl get nodes -o json = {result['discover_vs_kubectl']}  (target < 1)")
        print(
            f"peak RSS: engine-only process {engine_peak} MiB (target <= 250 MB = 238 MiB); this process (all three methods) {result['benchmark_process_peak_rss_mb']} MiB"
        )
        print(f"machine: {result['machine']}")
    ok = vs_gateway <= TARGET_GATEWAY and vs_kubectl < 1 and engine_peak <= 238  # 250 MB = 238 MiB
    return 0 if ok else 1


def real_lane(sizes: list[int], runs: int, as_json: bool) -> int:
    """Per size: the demo, then the real server, holding the same nodes; discover (as the restricted wizard
    user on the real server), the gateway's paged fetch, raw aiohttp, the built kubectl, the CLI."""
    from benchmarks.demo_server import large_scenario
    from benchmarks.realserver import built_kubectl, demo_nodes, real_cluster, server_version

    binary = built_kubectl()  # the same kubectl for both servers
    rows: list[dict[str, Any]] = []
    for size in sizes:
        # one server at a time: the demo measured and stopped, then the real one started with its nodes
        with tempfile.TemporaryDirectory() as tmp, served(str(large_scenario(Path(tmp), size))) as demo:
            nodes = demo_nodes(demo.kubeconfig)
            demo_times = asyncio.run(measure(demo.kubeconfig, runs, kubectl=binary))
            load_demo = os.getloadavg()[0]
        with real_cluster(nodes) as cluster:
            real_times = asyncio.run(measure(cluster.kubeconfig("wizard"), runs, kubectl=binary))
            load_real = os.getloadavg()[0]
            rows.append(
                {
                    "nodes": len(nodes),
                    "server": server_version(cluster),
                    "created_and_ready_s": round(cluster.created_s, 1),
                    "demo": {k: round(statistics.median(v), 3) for k, v in demo_times.items() if v},
                    "real": {k: round(statistics.median(v), 3) for k, v in real_times.items() if v},
                    "load_average": [round(load_demo, 1), round(load_real, 1)],
                }
            )
    result = {"machine": machine(), "runs": runs, "sizes": rows}
    if as_json:
        print(json.dumps(result, indent=2))
        return 0
    for row in rows:
        print(
            f"{row['nodes']} nodes (kube-apiserver {row['server']}; created and Ready in {row['created_and_ready_s']} s); "
            f"load {row['load_average'][0]} / {row['load_average'][1]}"
        )
        for name in ("discover", "gateway", "node_pages", "raw", "kubectl", "cli -o json", "discover cpu"):
            demo_s, real_s = row["demo"].get(name), row["real"].get(name)
            print(f"  {name:15s} demo {demo_s:.3f}s  real {real_s:.3f}s  real/demo {real_s / demo_s:.2f}")
        print(
            f"  discover / kubectl: demo {row['demo']['discover'] / row['demo']['kubectl']:.2f}, "
            f"real {row['real']['discover'] / row['real']['kubectl']:.2f}"
        )
    print(f"machine: {result['machine']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
