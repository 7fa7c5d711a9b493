"""Rollout benchmark: following a driver upgrade of N GPU nodes by watches, with the API requests it costs.

The ``large`` demo scenario (cut to ``--nodes`` GPU nodes) gets an upstream driver installed, then an
upgrade to another version with ``upgradePolicy.maxParallelUpgrades: 0`` and ``maxUnavailable: 100%``
(all nodes at once, so the demo finishes in minutes). The upgrade's rollout is followed by
``Cluster.rollout`` — five kinds listed once, then watched — and the client's requests are counted
(``Gateway.stats``). For comparison the same run measures what one round of the former poll cost
(the four lists, the label-selected node list among them, which carries every GPU node once the
operator labels them), i.e. what a 1-second poll would have added per second. It also reports the
client's peak RSS (``getrusage``; the demo server is another process) up to the end of the upgrade and
after the poll round (which holds every pod whole) and the longest event-loop stall of each engine
step the TUI runs on its loop — connect, preflight, discover, the registry's image checks, prepare
(dry-run and diff), apply (backup and writes) and following — with a loop-lag probe (sleep 10 ms,
record how late it wakes). ``render`` runs in a thread, as the TUI runs it.

``--stalls`` also samples the loop thread's stack whenever the loop is over 50 ms late and prints, per
step, where it was (``benchmarks/stallwatch.py``; stderr).

    .venv/bin/python benchmarks/rollout.py [--nodes 5000] [--json] [--stalls]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.demo_server import Served, large_scenario, machine, served
from benchmarks.stallwatch import Phased, StallWatch

OLD, NEW = "580.126.20", "595.91.07"


def scenario_file(folder: Path, nodes: int) -> Path:
    """The ``large`` scenario with ``nodes`` GPU nodes and a second upstream version to upgrade to."""
    tag = f"{NEW}-ubuntu22.04"
    digest = hashlib.sha256(f"nvcr.io/nvidia/driver:{tag}".encode()).hexdigest()

    def add_new_version(data: dict[str, Any]) -> None:
        data["registry"]["catalog"]["nvcr.io/nvidia/driver"][tag] = f"sha256:{digest}"

    return large_scenario(folder, nodes, add_new_version)


def _plan(version: str) -> Any:
    from wizard.engine.plan import Plan

    return Plan.model_validate({"mode": "upstream", "driver": {"version": version, "repository": "nvcr.io/nvidia"}})


class LoopLag(Phased):
    """The longest time the event loop was late to wake a 10 ms sleep (CPU work holding the loop), per step.

    Set :attr:`phase` as the engine moves on; a :class:`StallWatch`, when given, follows the same phase.
    """

    def __init__(self, watch: StallWatch | None = None) -> None:
        super().__init__(watch)
        self.max_ms: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}
        """This process's CPU seconds per step (the client's: the demo server runs in another process)."""
        self._cpu_mark, self._previous = time.process_time(), "start"

    def phase_changed(self, name: str) -> None:
        now = time.process_time()
        self.cpu_s[self._previous] = self.cpu_s.get(self._previous, 0.0) + now - self._cpu_mark
        self._cpu_mark, self._previous = now, name

    async def run(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            late = (time.perf_counter() - start - 0.01) * 1000
            self.max_ms[self._phase] = max(self.max_ms.get(self._phase, 0.0), late)


def peak_rss_mb() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _apply_and_follow(
    cluster: Any, plan: Any, backups: str, lag: LoopLag, step: str
) -> tuple[float, int, int, str]:
    """Check images, prepare, apply ``plan`` and follow its rollout, each a phase ``<step> <name>`` of ``lag``:
    (seconds following, requests, snapshots, final phase)."""
    from wizard.engine.registry_routes import registry_hosts
    from wizard.engine.render import render

    lag.phase = f"{step} discover"
    facts = await cluster.discover()
    lag.phase = f"{step} render (thread)"
    rendered = await asyncio.to_thread(render, plan, facts)
    lag.phase = f"{step} check images"
    async with cluster.open_registry(registry_hosts(plan), mirrors=plan.driver.registryMirrors) as registry:
        statuses = await cluster.check_images(rendered, registry)
    missing = [s.image for s in statuses if not s.ok]
    if missing:
        raise SystemExit(f"images missing in the demo registry: {missing[:3]}")
    lag.phase = f"{step} prepare"
    prepared = await cluster.prepare_apply(rendered)
    lag.phase = f"{step} apply"
    await cluster.apply(prepared, backup_dir=backups)
    lag.phase = f"{step} follow"
    before, start, snapshots, final = cluster.gateway.stats.requests, time.perf_counter(), 0, None
    async with contextlib.aclosing(cluster.rollout(plan, interval=1.0, timeout=1200)) as rollout:
        async for status in rollout:
            snapshots += 1
            final = status
    lag.phase = "between"
    seconds, requests = time.perf_counter() - start, cluster.gateway.stats.requests - before
    return seconds, requests, snapshots, final.phase


async def _one_poll(cluster: Any, namespace: str) -> tuple[float, int]:
    """What one round of the former 1-second poll cost: (seconds, bytes of JSON received)."""
    from wizard.cluster.core.preflight import POLICY
    from wizard.cluster.rollouts.rollout import DRIVER_SELECTOR
    from wizard.engine.facts import LABEL_UPGRADE_STATE

    gateway = cluster.gateway
    start = time.perf_counter()
    found = [
        await gateway.list_custom(*POLICY),
        await gateway.list_daemonsets(namespace, label_selector=DRIVER_SELECTOR),
        await gateway.list_nodes_page(label_selector=LABEL_UPGRADE_STATE),
        await gateway.list_pods(namespace),
    ]
    return time.perf_counter() - start, len(json.dumps(found))


async def measure(server: Served, stalls: bool = False) -> dict[str, Any]:
    from wizard.cluster.core.preflight import POLICY
    from wizard.cluster.facade import Cluster

    watch = StallWatch() if stalls else None
    if watch is not None:
        watch.start()
    lag = LoopLag(watch)
    probe = asyncio.create_task(lag.run())
    lag.phase = "connect"
    # a demo simulating thousands of nodes in one process answers slowly while it reconciles
    try:
        async with await Cluster.connect(kubeconfig=str(server.kubeconfig), timeout=300) as cluster:
            lag.phase = "preflight"
            await cluster.preflight(_plan(OLD))
            with tempfile.TemporaryDirectory() as backups:
                install = await _apply_and_follow(cluster, _plan(OLD), backups, lag, "install")
                policy = await cluster.gateway.get_custom(*POLICY, "cluster-policy")
                policy["spec"]["driver"]["upgradePolicy"].update(maxParallelUpgrades=0, maxUnavailable="100%")
                await cluster.gateway.replace_custom(*POLICY, "cluster-policy", policy)
                seconds, requests, snapshots, phase = await _apply_and_follow(
                    cluster, _plan(NEW), backups, lag, "upgrade"
                )
                followed_rss = peak_rss_mb()  # before the poll round below, which holds every pod whole
            lag.phase = "poll round"
            poll_seconds, poll_bytes = await _one_poll(cluster, await cluster.namespace(_plan(NEW)))
    finally:
        probe.cancel()
        if watch is not None:
            watch.stop()
            print(watch.report(), file=sys.stderr, flush=True)
    stalls_ms = {name: round(ms) for name, ms in lag.max_ms.items() if name not in ("start", "between", "poll round")}
    return {
        "install_seconds": round(install[0], 1),
        "install_requests": install[1],
        "install_max_stall_ms": round(lag.max_ms.get("install follow", 0.0)),
        "upgrade_seconds": round(seconds, 1),
        "upgrade_requests": requests,
        "upgrade_requests_per_second": round(requests / seconds, 3) if seconds else 0.0,
        "snapshots": snapshots,
        "upgrade_max_stall_ms": round(lag.max_ms.get("upgrade follow", 0.0)),
        "max_stall_ms": stalls_ms,
        "client_cpu_s": {
            name: round(cpu, 2) for name, cpu in lag.cpu_s.items() if name not in ("start", "between", "poll round")
        },
        "peak_rss_mb_following": round(followed_rss, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "phase": phase,
        "poll_round_seconds": round(poll_seconds, 3),
        "poll_round_mb": round(poll_bytes / 1e6, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--stalls", action="store_true", help="print where the loop stalled, per step (stderr)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder, served(str(scenario_file(Path(folder), args.nodes))) as server:
        result = asyncio.run(measure(server, args.stalls))
    result = {"nodes": args.nodes, **result, "load_average": round(os.getloadavg()[0], 1), "machine": machine()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"{args.nodes} GPU nodes: upgrade {OLD} → {NEW} followed by watches in {result['upgrade_seconds']} s "
            f"with {result['upgrade_requests']} API requests ({result['upgrade_requests_per_second']}/s), "
            f"{result['snapshots']} snapshots, ended {result['phase']}; longest event-loop stall "
            f"{result['upgrade_max_stall_ms']} ms (install {result['install_max_stall_ms']} ms), "
            f"peak RSS {result['peak_rss_mb_following']} MB while installing and following "
            f"({result['peak_rss_mb']} MB with the poll round).\n"
            f"Longest event-loop stall per step (ms; load average {os.getloadavg()[0]:.1f}): "
            + ", ".join(f"{name} {ms}" for name, ms in result["max_stall_ms"].items())
            + "\nClient CPU per step (s): "
            + ", ".join(f"{name} {cpu}" for name, cpu in result["client_cpu_s"].items())
            + "\n"
            f"One round of the former 1 s poll: 4 requests, {result['poll_round_mb']} MB, "
            f"{result['poll_round_seconds']} s — i.e. 4 requests/s and {result['poll_round_mb']} MB/s while it ran."
        )
    return 0 if result["phase"] == "ready" else 1


if __name__ == "__main__":
    sys.exit(main())
