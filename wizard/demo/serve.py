"""``gpu-wizard demo serve``: the demo cluster in the foreground until Ctrl-C, with a banner saying how to reach it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from wizard.demo.api.bootstrap import CONTEXT
from wizard.demo.cluster import DemoCluster, DemoStartError


def parser() -> argparse.ArgumentParser:
    """``gpu-wizard demo serve``'s options (its own parser: the CLI hands it the words after ``serve``)."""
    parser = argparse.ArgumentParser(
        prog="gpu-wizard demo serve",
        description="Run a SIMULATED Kubernetes cluster with the NVIDIA GPU Operator for demos and training.",
    )
    parser.add_argument(
        "--scenario", default="sle-micro-precompiled", help="bundled scenario name or a scenario YAML file"
    )
    parser.add_argument("--port", type=int, default=6443, help="port on 127.0.0.1 (0: any free port; default 6443)")
    parser.add_argument("--step-delay", type=float, default=0.5, help="seconds between simulation steps (default 0.5)")
    parser.add_argument(
        "--pod-start-latency",
        type=float,
        default=2.0,
        help="seconds from a pod's binding to its containers starting, as on a real node (default 2)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help=f"where to write the kubeconfig, which holds the demo's token (default {default_kubeconfig_path()})",
    )
    return parser


def default_kubeconfig_path() -> Path:
    """The state folder's ``demo.kubeconfig``: a token-bearing file does not belong in the current folder."""
    from wizard.paths import state_dir  # the one state-path helper

    return state_dir() / "demo.kubeconfig"


def _mirrors_line(cluster: DemoCluster) -> str:
    """What the kubeconfig's marker tells gpu-wizard about where the simulated images are checked."""
    mirrors = cluster.registry_mirrors
    if not mirrors:
        return "none simulated (image checks are SKIPPED)"
    targets = sorted({url.split("://", 1)[-1].split("/", 1)[0] for url in mirrors.values()})
    return (
        f"{', '.join(sorted(mirrors))} mirrored by {', '.join(targets)} "
        "(named in the kubeconfig; gpu-wizard follows it, as it follows --registry-mirror)"
    )


def _banner(cluster: DemoCluster) -> str:
    scenario = cluster.scenario
    nodes = len(list(cluster.store.iter_objects("nodes")))
    return "\n".join(
        [
            "gpu-wizard demo cluster: SIMULATED (no real nodes, GPUs or drivers; nothing is installed anywhere)",
            f"  scenario:    {scenario.name}" + (f" - {scenario.description.strip()}" if scenario.description else ""),
            f"  nodes:       {nodes} simulated, GPU Operator {scenario.operator.release}",
            f"  API server:  {cluster.url} (Kubernetes REST API served by gpu-wizard, reports v1.33)",
            f"  kubeconfig:  {cluster.kubeconfig_path} (context {CONTEXT})",
            f"  registry:    {_mirrors_line(cluster)}",
            "",
            "In another shell, point kubectl or gpu-wizard at it:",
            f"  export KUBECONFIG={shlex.quote(str(cluster.kubeconfig_path))}",
            "",
            "Press Ctrl-C to stop.",
        ]
    )


async def _serve(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    kubeconfig = Path(args.kubeconfig) if args.kubeconfig else default_kubeconfig_path()
    if not args.kubeconfig:
        try:
            kubeconfig.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoStartError(f"cannot create the state folder {kubeconfig.parent}: {exc.strerror or exc}") from None
    async with DemoCluster(
        args.scenario,
        port=args.port,
        step_delay=args.step_delay,
        kubeconfig_path=kubeconfig,
        pod_start_latency=args.pod_start_latency,
        freeze_settled=True,
    ) as cluster:
        print(_banner(cluster), flush=True)
        started = time.monotonic()
        await stop.wait()
        print(f"\nstopping the demo cluster after {time.monotonic() - started:.0f}s", flush=True)
    return 0


def _server_loop() -> Callable[[], asyncio.AbstractEventLoop]:
    """The standalone server's event loop: uvloop's where it is installed (not on Windows)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def main(argv: list[str] | None = None) -> int:
    """``gpu-wizard demo serve``: run the demo cluster in the foreground until Ctrl-C."""
    args = parser().parse_args(argv)
    from wizard.demo.scenarios.scenario import ScenarioError

    try:
        with asyncio.Runner(loop_factory=_server_loop()) as runner:
            return runner.run(_serve(args))
    except ScenarioError as exc:
        print(f"gpu-wizard demo serve: {exc}", file=sys.stderr)
        return 2
    except DemoStartError as exc:
        print(f"gpu-wizard demo serve: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
