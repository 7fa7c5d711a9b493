"""Verification benchmark on the real path: ``Cluster.verify()`` of 1,000 or 5,000 GPU nodes, host checks through one DaemonSet.

The ``large`` demo scenario cut to ``--nodes`` GPU nodes with ``faults.exec_latency_ms`` (50 ms) and
a pod start latency (``--pod-start-latency``, 2 s: binding to sandbox, as on a real node), an
upstream driver applied and rolled out, then:

* ``verify``: the whole verification. ``nvidia-smi`` runs as an exec in each driver container
  (``--concurrency`` at once); the host checks (paths, the drop-in's BinaryName) of every node run in
  ONE probe DaemonSet started with it. Ideal: one pod start + nodes ÷ concurrency × exec latency.
* ``check_paths``: ``Cluster.check_paths()`` (the path check before apply), through the same host probe.
  Ideal: one pod start.
* ``host checks, DaemonSet``: the same host steps through ``run_on_hosts`` alone. Ideal: one pod start.
* ``host checks, per-node pods`` (``--compare-nodes``, default 1,000: at 5,000 nodes it would run for
  ten minutes): the previous path, a probe pod and an exec per node, ``--concurrency`` at once. Ideal:
  nodes ÷ concurrency × (pod start + exec latency).

API requests are counted on the client (every request the gateway sends, watches and execs
included), reads and writes apart: the DaemonSet path's writes must not grow with the node count.
Target: verify ≤ 1.3 × ideal at 5,000 nodes. The demo server runs in its own process; each run
reports the CPU seconds the client and the server used in its wall time (on 2 cores they share,
their sum against the wall shows whether a run waited for the cluster or for a CPU), the client's CPU
per GPU node, and the longest event-loop stall (a 10 ms heartbeat; with the loop thread's own CPU in
it, since on shared cores a stall can be time spent waiting for a core). Timings on shared cores are noisy.

    .venv/bin/python benchmarks/verification.py [--nodes 5000] [--concurrency 16] [--latency-ms 50]
        [--pod-start-latency 2] [--compare-nodes 1000] [--json] [--stalls]

``--real`` runs apply + rollout, ``verify()`` and the host-check DaemonSet on the demo and then on a real
kube-apiserver with kwok and the real GPU Operator holding the same nodes (``benchmarks/realserver.py``),
operands other than the driver, the toolkit and the validator off on both, the path check left out.

``--stalls`` samples the client's event loop whenever it is over 50 ms late and prints where it was
(``benchmarks/stallwatch.py``; stderr) and the longest stall of each run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import Served, cpu_ticks, large_scenario, machine, peak_rss_mb, served, steal_pct
from benchmarks.stallwatch import StallWatch

TARGET = 1.3
_WRITES = ("create", "delete", "patch", "replace")


def scenario_file(folder: Path, nodes: int, latency_ms: int) -> Path:
    """The ``large`` scenario with ``nodes`` GPU nodes spread over its kernels and the exec latency fault."""
    return large_scenario(folder, nodes, lambda data: data.update(faults={"exec_latency_ms": latency_ms}))


async def settle(server: Served, limit: float = 300.0) -> None:
    """Wait until the simulation behind the server has finished reacting (its CPU is idle for a second).

    A real cluster is never idle (kwok renews every node's lease): it is given ``server.settle_s`` instead."""
    pause = getattr(server, "settle_s", None)
    if pause is not None:
        await asyncio.sleep(pause)
        return
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = server.cpu_seconds()
        await asyncio.sleep(1.0)
        if server.cpu_seconds() - before < 0.05:
            return


class LoopLag:
    """The longest time the event loop was late for a 10 ms heartbeat, and the loop thread's own CPU in it
    (the rest of a stall is the process waiting for a core: on shared cores not the code's doing)."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.longest = (0.0, 0.0)
        self._task: asyncio.Task[None] | None = None
        self._ticks = (0, 0)

    def start(self) -> None:
        self.longest = (0.0, 0.0)
        self._ticks = cpu_ticks()
        self._task = asyncio.get_running_loop().create_task(self._beat())

    async def stop(self) -> dict[str, float]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return {
            "max_stall_ms": round(self.longest[0] * 1000),
            "max_stall_cpu_ms": round(self.longest[1] * 1000),
            "steal_pct": steal_pct(self._ticks, cpu_ticks()),
        }

    async def _beat(self) -> None:
        while True:
            wall, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.interval)
            late = time.perf_counter() - wall - self.interval
            if late > self.longest[0]:
                self.longest = (late, time.thread_time() - cpu)


OPERANDS_OFF = ("devicePlugin", "dcgm", "dcgmExporter", "gfd", "migManager", "nodeStatusExporter")


def only_driver_and_toolkit(policy: dict[str, Any]) -> None:
    """The real-server lane's ClusterPolicy: every operand but the driver, the toolkit and the validator
    off, so that 2 cores schedule and run 3 pods per node instead of 7 (the verification reads only those)."""
    for section in OPERANDS_OFF:
        policy["spec"].setdefault(section, {})["enabled"] = False


def count_requests(gateway: Any) -> Counter[str]:
    """Count the gateway's requests from now on: ``reads``, ``writes``, ``watches``, ``execs`` (a tally, not a stand-in)."""
    counts: Counter[str] = Counter()
    call, watch, execute = gateway.call, gateway.watch, gateway.exec

    async def counted_call(what: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        name = getattr(fn, "__name__", "")
        counts["writes" if name.startswith(_WRITES) else "reads"] += 1
        return await call(what, fn, *args, **kwargs)

    def counted_watch(*args: Any, **kwargs: Any) -> Any:
        counts["watches"] += 1
        return watch(*args, **kwargs)

    async def counted_exec(*args: Any, **kwargs: Any) -> Any:
        counts["execs"] += 1
        return await execute(*args, **kwargs)

    gateway.call, gateway.watch, gateway.exec = counted_call, counted_watch, counted_exec
    return counts


async def measure(
    server: Served,
    args: argparse.Namespace,
    compare: bool,
    plan_extra: dict[str, Any] | None = None,
    operands_off: bool = False,
    path_check: bool = True,
) -> dict[str, Any]:
    from wizard.cluster.facade import Cluster
    from wizard.cluster.probes.hostprobe import _per_node_pods, run_on_hosts
    from wizard.cluster.verification.proving import verify_context
    from wizard.engine.plan import Plan
    from wizard.engine.render import render
    from wizard.engine.results import Check

    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}, **(plan_extra or {})}
    )
    out: dict[str, Any] = {}
    async with await Cluster.connect(kubeconfig=str(server.kubeconfig), timeout=600) as cluster:
        start = time.perf_counter()
        rendered = render(plan, await cluster.discover())
        if operands_off:
            only_driver_and_toolkit(rendered.cluster_policy)
        prepared = await cluster.prepare_apply(rendered)
        with tempfile.TemporaryDirectory() as backups:
            await cluster.apply(prepared, backup_dir=backups)
        async with contextlib.aclosing(cluster.rollout(plan, interval=0.5, timeout=1200)) as rollout:
            async for status in rollout:
                final = status
        out["rollout_s"] = time.perf_counter() - start
        if final.phase != "ready":
            raise SystemExit(f"rollout did not get ready: {final.message}")
        await settle(server)
        counts = count_requests(cluster.gateway)
        watch = StallWatch() if args.stalls else None
        if watch is not None:
            watch.start()
            watch.phase = "verify"

        lag = LoopLag()
        lag.start()
        start, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu_seconds()
        stream = cluster.verify(plan, concurrency=args.concurrency, timeout=120)
        checks = [item async for item in stream if isinstance(item, Check)]
        out["verify"] = {
            "s": time.perf_counter() - start,
            "client_cpu_s": time.process_time() - cpu,
            "server_cpu_s": server.cpu_seconds() - server_cpu,
            "checks": len(checks),
            "requests": dict(counts),
            **await lag.stop(),
        }
        failed = [c.line() for c in checks if not c.ok]
        out["verify"]["failed_checks"] = len(failed)
        print(f"phase verify: {json.dumps(out['verify'])}", file=sys.stderr, flush=True)  # kept if a later phase fails
        if failed:  # reported with the numbers (a failure at scale is a finding too), not instead of them
            print(f"verification: {len(failed)} checks failed, e.g.:\n" + "\n".join(failed[:5]), file=sys.stderr)
        await settle(server)

        if path_check:  # the real lane's kwok answers verification's host steps, not the path check's
            if watch is not None:
                watch.phase = "check_paths"
            lag.start()
            start, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu_seconds()
            found = [c async for c in cluster.check_paths(plan, concurrency=args.concurrency, timeout=120)]
            out["check_paths"] = {
                "s": time.perf_counter() - start,
                "client_cpu_s": time.process_time() - cpu,
                "server_cpu_s": server.cpu_seconds() - server_cpu,
                "checks": len(found),
                **await lag.stop(),
            }
            if found[-1].check != "summary" or not found[-1].ok:
                bad = "\n".join(c.line() for c in found if not c.ok)
                raise SystemExit(f"check_paths failed: {bad[:2000]}")
            await settle(server)

        if watch is not None:
            watch.phase = "host checks"
        ctx = await verify_context(cluster.session, plan, None, registry=None, timeout=120)
        steps = ctx.host_steps()
        facts = await cluster.discover()
        nodes = sorted(n.name for n in facts.gpu_nodes)
        paths: dict[str, Any] = {"DaemonSet": run_on_hosts}
        if compare:
            paths["per-node pods"] = _per_node_pods
        for name, path in paths.items():
            targets = nodes if name == "DaemonSet" else nodes[: args.compare_nodes]
            counts.clear()
            lag.start()
            start, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu_seconds()
            runs = path(
                cluster.gateway,
                targets,
                steps,
                namespace=ctx.namespace,
                image=ctx.probe_image,
                timeout=120,
                concurrency=args.concurrency,
                # as the product's callers do: thousands of nodes selected by one GPU label (probenodes.py)
                **({"node_labels": facts.labels_by_node()} if name == "DaemonSet" else {}),
            )
            results = [r async for r in runs]
            bad = [r for r in results if not getattr(r, "ran", False)]
            if bad:
                raise SystemExit(f"host checks ({name}) failed: {bad[:3]}")
            out[name] = {
                "s": time.perf_counter() - start,
                "client_cpu_s": time.process_time() - cpu,
                "server_cpu_s": server.cpu_seconds() - server_cpu,
                "nodes": len(targets),
                "requests": dict(counts),
                **await lag.stop(),
            }
            await settle(server)
    if watch is not None:
        watch.stop()
        print(watch.report(), file=sys.stderr, flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--pod-start-latency", type=float, default=2.0)
    parser.add_argument("--compare-nodes", type=int, default=1000, help="nodes for the per-node pods path (0: skip)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--stalls", action="store_true", help="print where the client's loop stalled (stderr)")
    parser.add_argument(
        "--real",
        action="store_true",
        help="the real-server lane: the same nodes on the demo and on a real kube-apiserver with kwok and the "
        "real GPU Operator, side by side (operands other than driver, toolkit and validator off on both)",
    )
    args = parser.parse_args()
    if args.real:
        return real_lane(args)
    latency, start = args.latency_ms / 1000, args.pod_start_latency
    with tempfile.TemporaryDirectory() as tmp:
        scenario = str(scenario_file(Path(tmp), args.nodes, args.latency_ms))
        with served(scenario, pod_start_latency=start) as server:
            m = asyncio.run(measure(server, args, args.compare_nodes > 0))
    ideal = {
        "verify": start + args.nodes / args.concurrency * latency,
        "check_paths": start,
        "DaemonSet": start,
        "per-node pods": args.compare_nodes / args.concurrency * (start + latency),
    }
    result: dict[str, Any] = {
        "machine": machine(),
        "nodes": args.nodes,
        "concurrency": args.concurrency,
        "exec_latency_ms": args.latency_ms,
        "pod_start_latency_s": start,
        "rollout_s": round(m["rollout_s"], 1),
        "runs": {
            name: {
                **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in m[name].items()},
                "ideal_s": round(ideal[name], 2),
                "vs_ideal": round(m[name]["s"] / ideal[name], 2),
            }
            for name in ("verify", "check_paths", "DaemonSet", "per-node pods")
            if name in m
        },
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.nodes} GPU nodes, concurrency {args.concurrency}, exec latency {args.latency_ms} ms, "
            f"pod start {start:g}s; apply + rollout {result['rollout_s']}s"
        )
        for name, r in result["runs"].items():
            nodes = f" ({r['nodes']} nodes)" if "nodes" in r else ""
            print(
                f"{name}{nodes}: {r['s']}s = {r['vs_ideal']} × ideal {r['ideal_s']}s; requests {r.get('requests', '-')}"
            )
            per_node = r["client_cpu_s"] / r.get("nodes", args.nodes) * 1000
            print(
                f"  CPU: client {r['client_cpu_s']}s ({per_node:.2f} ms per node), demo server {r['server_cpu_s']}s "
                "(2 cores shared by both)"
            )
            print(
                f"  longest loop stall {r['max_stall_ms']} ms (of it the loop thread's CPU: {r['max_stall_cpu_ms']} ms); "
                f"CPU time stolen by the hypervisor meanwhile: {r['steal_pct']} %"
            )
        print(f"peak RSS of this process: {result['peak_rss_mb']} MiB; machine: {result['machine']}")
    verified = result["runs"]["verify"]
    return 0 if verified["vs_ideal"] <= TARGET and not verified["failed_checks"] else 1


def real_lane(args: argparse.Namespace) -> int:
    """The demo (its exec and pod start latencies as given), then a real cluster holding the same nodes with
    the real operator: apply + rollout, verify, the path check and the host-check DaemonSet on each."""
    from benchmarks.realserver import RealServed, demo_nodes, real_cluster, server_version
    from tests.realcluster.build import build
    from tests.realcluster.flows import healthy_host

    toolkit = "/usr/local/nvidia"
    # the release the real operator runs: the chart of a newer one sets fields its CRD does not declare
    plan_extra = {"toolkit": {"installDir": toolkit}, "operator": {"version": build().releases()[-1]}}
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        scenario = str(scenario_file(Path(tmp), args.nodes, args.latency_ms))
        with served(scenario, pod_start_latency=args.pod_start_latency) as demo:
            nodes = demo_nodes(demo.kubeconfig)
            runs["demo"] = asyncio.run(measure(demo, args, False, plan_extra, operands_off=True, path_check=False))
    with real_cluster(nodes, operator=True) as cluster:
        cluster.set_stages({}, {}, healthy_host(toolkit))
        cluster.set_driver_version("580.126.20")
        real = RealServed(cluster.kubeconfig("wizard"), cluster)
        version, created = server_version(cluster), cluster.created_s
        runs["real"] = asyncio.run(
            measure(real, args, False, plan_extra, operands_off=True, path_check=False)  # type: ignore[arg-type]
        )
    result = {
        "machine": machine(),
        "nodes": len(nodes),
        "gpu_nodes": args.nodes,
        "server": version,
        "operator": cluster.release,
        "nodes_created_and_ready_s": round(created, 1),
        "concurrency": args.concurrency,
        "demo_exec_latency_ms": args.latency_ms,
        "demo_pod_start_latency_s": args.pod_start_latency,
        "runs": {
            side: {
                "rollout_s": round(m["rollout_s"], 1),
                **{
                    name: {k: (round(v, 2) if isinstance(v, float) else v) for k, v in m[name].items()}
                    for name in ("verify", "DaemonSet")
                },
            }
            for side, m in runs.items()
        },
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.nodes} GPU nodes; kube-apiserver {version}, GPU Operator {cluster.release}")
        for name in ("rollout_s", "verify", "DaemonSet"):
            demo_m, real_m = result["runs"]["demo"][name], result["runs"]["real"][name]
            d, r = (demo_m, real_m) if name == "rollout_s" else (demo_m["s"], real_m["s"])
            print(f"  {name:12s} demo {d}s  real {r}s")
    failed = result["runs"]["real"]["verify"].get("failed_checks")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
