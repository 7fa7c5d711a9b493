"""What ``benchmarks/tui_scale.py`` measures, and how it judges it: the parts that stand on their own.

* The loop probe (:class:`LoopProbe`): how late a 10 ms sleep wakes, per phase of the walk (the
  event-loop stall), how much of that the loop's thread spent computing, its longest single callback,
  garbage collections, and cProfile of chosen phases.
* The process's memory (:func:`rss_mb`, :func:`hwm_mb`, :func:`server_rss_mb`), and the idle period's
  growth and CPU (:func:`idle`).
* The engine-alone runs (:func:`engine_paths`, :func:`engine_verify`): the TUI's path check and
  verification repeated through ``wizard.cluster.facade`` alone, consumed headless, for the TUI ÷ engine ratio.
* The targets of issue 12, the verdicts (:func:`verdicts`) and the text report (:func:`report_lines`).

The Pilot walk, the idle period and the command line stay in ``tui_scale.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import gc
import io
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.demo_server import Served
from benchmarks.stallwatch import Phased, StallWatch

TARGETS = {"max_stall_ms": 100.0, "ratio": 1.3, "peak_rss_mb": 500.0, "idle_rss_growth_mb": 10.0}
TARGETS |= {"idle_cpu_pct": 2.0, "f1_ms": 200.0, "quit_ms": 200.0}
#: Issue 28: no single loop turn over 50 ms of the loop thread's CPU, so a busy machine cannot stretch one into a stall.
TARGETS |= {"max_turn_cpu_ms": 50.0}
#: The loop-lag probe's sleep while the steps run, and while idle (slower: it must not be the idle CPU).
PROBE_S, IDLE_PROBE_S = 0.010, 0.100


def rss_mb() -> float:
    """This process's resident set size now, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def hwm_mb() -> float:
    """This process's peak resident set size so far, in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def server_rss_mb(pid: int) -> float:
    """The demo server's resident set size now, in MiB (0 when it cannot be read)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def idle(probe: LoopProbe, seconds: float, server: Served) -> dict[str, float]:
    """Leave the finished wizard alone for ``seconds``: RSS growth, CPU used, longest stall (and the server's)."""
    probe.phase, probe.interval = "idle", IDLE_PROBE_S
    await asyncio.sleep(2.0)  # the last frame and the finished workers' messages
    rss_before, cpu_before, start = rss_mb(), time.process_time(), time.perf_counter()
    server_rss, server_cpu = server_rss_mb(server.pid), server.cpu_seconds()
    await asyncio.sleep(seconds)
    cpu, wall = time.process_time() - cpu_before, time.perf_counter() - start
    server_cpu = server.cpu_seconds() - server_cpu
    probe.interval = PROBE_S
    return {
        "idle_s": round(wall, 1),
        "idle_rss_growth_mb": round(rss_mb() - rss_before, 1),
        "idle_cpu_pct": round(100 * cpu / wall, 2),
        "idle_max_stall_ms": round(probe.stalls.get("idle", 0.0), 1),
        "idle_max_busy_stall_ms": round(probe.busy.get("idle", 0.0), 1),
        "server_idle_cpu_pct": round(100 * server_cpu / wall, 2),
        "server_idle_rss_growth_mb": round(server_rss_mb(server.pid) - server_rss, 1),
    }


# -- the loop probe ------------------------------------------------------------------------------


class LoopProbe(Phased):
    """Sleeps ``interval`` over and over and records, per phase, how late it woke (the event-loop stall)."""

    def __init__(self, watch: StallWatch | None = None, profile: set[str] | None = None) -> None:
        super().__init__(watch)
        self.profile_phases = profile or set()
        self.profiles: dict[str, cProfile.Profile] = {}
        """Phase -> its cProfile of the loop thread (for the phases asked with ``--profile``)."""
        self._profiling: cProfile.Profile | None = None
        self.gc_max: dict[str, float] = {}
        """Phase -> the longest garbage collection (ms): a full pass walks every object the process holds."""
        self.gc_total: dict[str, float] = {}
        self._gc_started = 0.0
        self.interval = PROBE_S
        self.stalls: dict[str, float] = {}
        self.busy: dict[str, float] = {}
        self.turns: dict[str, float] = {}
        """Phase -> the loop thread's CPU in its longest callback (ms): a stall's own work, whatever the load."""
        self._task: asyncio.Task[None] | None = None
        self._handle_run: Callable[[asyncio.Handle], None] | None = None

    def phase_changed(self, name: str) -> None:
        if self._profiling is not None:
            self._profiling.disable()
            self._profiling = None
        if name in self.profile_phases:  # set from the loop thread: cProfile follows the thread it is enabled in
            self._profiling = self.profiles.setdefault(name, cProfile.Profile())
            self._profiling.enable()

    def profile_report(self, folder: Path | None, top: int = 30) -> str:
        """Each profiled phase's most expensive functions (own time), and their ``.pstats`` in ``folder``."""
        out = io.StringIO()
        for name, profile in self.profiles.items():
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
                profile.dump_stats(folder / f"tui-scale-{name.replace(' ', '-')}.pstats")
            stats = pstats.Stats(profile, stream=out)
            print(f"== profile of phase {name!r} (loop thread), by own time", file=out)
            stats.sort_stats("tottime").print_stats(top)
        return out.getvalue()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._time_turns()
        gc.callbacks.append(self._gc)
        if self.watch is not None:
            self.watch.start()

    def _gc(self, event: str, info: dict[str, int]) -> None:
        if event == "start":
            self._gc_started = time.perf_counter()
            return
        ms = (time.perf_counter() - self._gc_started) * 1000
        self.gc_max[self.phase] = max(self.gc_max.get(self.phase, 0.0), ms)
        self.gc_total[self.phase] = self.gc_total.get(self.phase, 0.0) + ms

    def _time_turns(self) -> None:
        """Time every callback the loop runs (a task's step between two awaits, a timer) on the thread's CPU clock.

        The probe's lateness adds up every callback run before it, and the time the machine gave other
        processes; the longest callback is the part one handler, or one Textual layout, holds the loop.
        """
        run = self._handle_run = asyncio.Handle._run
        turns, clock = self.turns, time.thread_time

        def timed(handle: asyncio.Handle) -> None:
            started = clock()
            try:
                run(handle)
            finally:
                ms = (clock() - started) * 1000
                if ms > turns.get(self.phase, 0.0):
                    turns[self.phase] = ms

        asyncio.Handle._run = timed  # type: ignore[method-assign]

    def stop(self) -> None:
        if self._handle_run is not None:
            asyncio.Handle._run = self._handle_run  # type: ignore[method-assign]
            self._handle_run = None
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._gc)
        if self._task is not None:
            self._task.cancel()
        if self.watch is not None:
            self.watch.stop()
            print(self.watch.report(), file=sys.stderr, flush=True)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            interval, before, cpu = self.interval, loop.time(), time.thread_time()
            await asyncio.sleep(interval)
            late = (loop.time() - before - interval) * 1000
            # the part of the lateness the loop's thread spent computing: on a shared machine the rest
            # is time the OS gave to other processes, not work of the wizard's
            busy = min(late, (time.thread_time() - cpu) * 1000)
            self.stalls[self.phase] = max(self.stalls.get(self.phase, 0.0), late)
            self.busy[self.phase] = max(self.busy.get(self.phase, 0.0), busy)


# -- the same operations through the engine alone -----------------------------------------------


async def consume_like_the_tui(stream: Any) -> None:
    """Read a stream to its end under the TUI's collector policy (``wizard.collector``), drawing nothing.

    The engine-alone runs share this process and its heap with the idle TUI: without the same policy
    their full collections walk the whole TUI too (3.5 s at 5,000 nodes), and the ratio would credit
    the TUI with the difference. Refrozen every 0.1 s, as the TUI's batches are.
    """
    from wizard import collector

    loop = asyncio.get_running_loop()
    last = loop.time()
    with collector.frozen():
        async with contextlib.aclosing(stream):
            async for _ in stream:
                if loop.time() - last > 0.1:
                    collector.keep()
                    last = loop.time()


async def engine_paths(kubeconfig: Path, plan: Any, toolkit_dir: str | None) -> float:
    """The same path check through ``wizard.cluster.facade`` alone, consumed headless: seconds."""
    from wizard.cluster.facade import Cluster

    async with await Cluster.connect(kubeconfig=str(kubeconfig), timeout=60) as cluster:
        start = time.perf_counter()
        stream = cluster.check_paths(plan, toolkit_install_dir=toolkit_dir)
        await consume_like_the_tui(stream)
        return time.perf_counter() - start


async def engine_verify(kubeconfig: Path, plan: Any, rendered: Any) -> float:
    """The same verification (with the same registry) through ``wizard.cluster.facade`` alone: seconds."""
    from wizard.cluster.facade import Cluster, open_registry
    from wizard.engine.registry_routes import registry_hosts

    async with await Cluster.connect(kubeconfig=str(kubeconfig), timeout=60) as cluster:
        hosts, mirrors = registry_hosts(plan), plan.driver.registryMirrors
        async with contextlib.AsyncExitStack() as stack:
            registry = None
            if cluster.registry_options(hosts, mirrors):
                registry = await stack.enter_async_context(open_registry(cluster, hosts, mirrors=mirrors))
            start = time.perf_counter()
            stream = cluster.verify(plan, rendered, registry=registry, no_registry="no registry")
            await consume_like_the_tui(stream)
            return time.perf_counter() - start


# -- targets and report -------------------------------------------------------------------------


def verdicts(result: dict[str, Any]) -> list[str]:
    """One line per target that was missed."""
    missed = []
    for name, step in result["steps"].items():
        if step["max_stall_ms"] > TARGETS["max_stall_ms"]:
            missed.append(f"{name}: event-loop stall {step['max_stall_ms']} ms > {TARGETS['max_stall_ms']:g}")
        if step["max_turn_cpu_ms"] > TARGETS["max_turn_cpu_ms"]:
            missed.append(f"{name}: loop turn {step['max_turn_cpu_ms']} ms of CPU > {TARGETS['max_turn_cpu_ms']:g}")
    for name, ratio in result["ratio"].items():
        if ratio > TARGETS["ratio"]:
            missed.append(f"{name}: TUI ÷ engine {ratio} > {TARGETS['ratio']}")
    for name in ("peak_rss_mb", "idle_rss_growth_mb", "idle_cpu_pct", "quit_ms"):
        if name in result and result[name] > TARGETS[name]:
            missed.append(f"{name} {result[name]} > {TARGETS[name]:g}")
    for where, ms in result["f1_ms"].items():
        if ms > TARGETS["f1_ms"]:
            missed.append(f"F1 at {where}: {ms} ms > {TARGETS['f1_ms']:g}")
    return missed


def report_lines(result: dict[str, Any]) -> list[str]:
    """The human-readable report of a run (what ran of it: ``--until`` leaves out the idle period and the ratios)."""
    steps, alone, ratio = result["steps"], result["engine"], result["ratio"]
    beside = "; one CPU-bound process beside it" if result.get("background_load") else ""
    lines = [f"{result['nodes']} GPU nodes at 80×24; machine: {result['machine']}{beside}"]
    for name, step in steps.items():
        lines.append(
            f"  {name:8} {step['seconds']:8.2f} s  longest stall {step['max_stall_ms']:7.1f} ms "
            f"(busy {step['max_busy_stall_ms']:7.1f} ms, longest turn {step['max_turn_cpu_ms']:6.1f} ms, "
            f"GC {step['gc_max_ms']:6.1f} ms)  RSS {step['rss_mb']} MiB"
        )
    for name in ratio:
        lines.append(f"  {name}: TUI {steps[name]['seconds']} s ÷ engine alone {alone[name + '_s']} s = {ratio[name]}")
    if "idle_s" in result:
        lines.append(
            f"  peak RSS {result['peak_rss_mb']} MiB; idle {result['idle_s']} s: RSS growth "
            f"{result['idle_rss_growth_mb']} MiB, CPU {result['idle_cpu_pct']} % of a core, "
            f"longest stall {result['idle_max_stall_ms']} ms; the demo server meanwhile: "
            f"CPU {result['server_idle_cpu_pct']} %, RSS growth {result['server_idle_rss_growth_mb']} MiB"
        )
    else:
        lines.append(f"  peak RSS {result['peak_rss_mb']} MiB; stopped after {result['until']}: no idle period")
    lines.append(f"  F1: {result['f1_ms']} ms (loop CPU {result['f1_cpu_ms']} ms); Ctrl+Q: {result['quit_ms']} ms")
    if result["verify_failed"]:
        lines.append(f"  verification findings: {result['verify_failed']}")
    missed = result["targets_missed"]
    lines.append("targets: " + ("all met" if not missed else "missed:\n    " + "\n    ".join(missed)))
    return lines
