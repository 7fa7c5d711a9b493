"""Running the demo cluster on a thread of its own (:class:`DemoClusterThread`) or in the foreground (``gpu-wizard demo serve``).

The cluster itself (store, simulation, API server, kubeconfig) is :class:`wizard.demo.cluster.DemoCluster`,
which runs in a coroutine; a thread with its own event loop serves it to synchronous code (tests,
subprocesses), and ``demo serve`` runs it until Ctrl-C with a banner saying how to reach it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shlex
import signal
import ssl
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from wizard.demo.api.bootstrap import CONTEXT
from wizard.demo.cluster import DemoCluster, DemoStartError
from wizard.demo.scenarios.scenario import Scenario


class DemoClusterThread:
    """The same demo cluster in a background thread with its own event loop (for sync code and subprocesses)."""

    def __init__(self, scenario: Scenario | str, **kwargs: Any) -> None:
        self._scenario = scenario
        self._kwargs = kwargs
        self._cluster: DemoCluster | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, timeout: float = 60.0) -> Self:
        """Start the cluster and return once it serves requests."""
        self._thread = threading.Thread(target=self._run, name="gpu-wizard-demo", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the demo cluster did not start in time")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with DemoCluster(self._scenario, **self._kwargs) as cluster:
            self._cluster = cluster
            self._ready.set()
            await self._stop.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the cluster and join its thread."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def cluster(self) -> DemoCluster:
        """The running :class:`DemoCluster` (its methods must run on the cluster's loop)."""
        if self._cluster is None:
            raise RuntimeError("the demo cluster is not running")
        return self._cluster

    def call(self, func: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``func`` on the cluster's event loop thread and return its result."""
        assert self._loop is not None

        async def run() -> Any:
            return func()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def settle(self, timeout: float = 30.0) -> None:
        """Block until the simulation is stable."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self.cluster.settle(timeout), self._loop).result(timeout + 5)

    url = property(lambda self: self.cluster.url, doc="``http://127.0.0.1:PORT``")
    token = property(lambda self: self.cluster.token, doc="The bearer token.")
    kubeconfig_path = property(
        lambda self: self.cluster.kubeconfig_path, doc="The kubeconfig written for this cluster."
    )
    store = property(lambda self: self.cluster.store, doc="The object store.")
    sim = property(lambda self: self.cluster.sim, doc="The simulation.")
    scenario = property(lambda self: self.cluster.scenario, doc="The scenario.")
    faults = property(lambda self: self.cluster.faults, doc="The live fault settings.")
    ca_path = property(lambda self: self.cluster.ca_path, doc="The TLS certificate (None over http).")

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context trusting this cluster (None when it serves plain http)."""
        return self.cluster.ssl_context()

    def registry_options(self) -> dict[str, Any]:
        """Keyword arguments for ``wizard.registry.client.RegistryClient`` that reach this cluster's images."""
        return self.cluster.registry_options()


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
    """The standalone server's event loop: uvloop's where it is installed (not on Windows).

    Every exec is a TLS connection of its own, so a verification of 5,000 nodes is 5,000 TLS handshakes
    and websockets on this one loop, beside the simulation: uvloop's transports and TLS cost about a
    tenth less of the server's CPU than asyncio's pure-Python TLS. The in-process demo (tests, ``--demo``)
    keeps asyncio's loop, the one its host process runs."""
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
