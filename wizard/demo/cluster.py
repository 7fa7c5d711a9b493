"""The demo cluster in a coroutine (:class:`DemoCluster`): store, simulation, API server and kubeconfig."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import secrets
import ssl
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from aiohttp import web

from wizard.demo.api import tls
from wizard.demo.api.bootstrap import register_crds, write_kubeconfig
from wizard.demo.api.faults import Faults
from wizard.demo.api.server import ApiServer
from wizard.demo.api.store import Store, WatchEvent
from wizard.demo.scenarios.scenario import Scenario

if TYPE_CHECKING:
    from wizard.demo.sim.simulation import Simulation

log = logging.getLogger(__name__)


class DemoStartError(Exception):
    """The demo cluster could not start (port taken, kubeconfig not writable, no certificate)."""


def _load(scenario: Scenario | str) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    from wizard.demo.scenarios.scenario import load_scenario

    return load_scenario(scenario)


def _simulation(scenario: Scenario, store: Store) -> Simulation:
    from wizard.demo.sim.simulation import Simulation  # loaded when a demo starts, not with the CLI

    return Simulation(scenario, store)


def _freeze_survivors() -> None:
    """Take what survived the simulation's last burst of work out of the cyclic collector's sight.

    Only for a process that serves the demo alone (docs/benchmarks.md, "Costs behind the code")."""
    gc.collect(1)
    gc.freeze()


class DemoCluster:
    """A running demo cluster, as an async context manager."""

    def __init__(
        self,
        scenario: Scenario | str,
        port: int = 0,
        token: str | None = None,
        step_delay: float = 0.0,
        kubeconfig_path: str | Path | None = None,
        simulation: Callable[[Scenario, Store], Simulation] | None = None,
        tls: bool | None = None,
        pod_start_latency: float = 0.0,
        freeze_settled: bool = False,
    ) -> None:
        self.scenario = _load(scenario)
        self.freeze_settled = freeze_settled
        """Whether the process belongs to this cluster alone (``demo serve``): see :func:`_freeze_survivors`."""
        self.port = port
        self.token = token or secrets.token_urlsafe(24)
        self.step_delay = step_delay
        self.store = Store()
        self.faults = Faults.from_spec(self.scenario.faults)
        if self.scenario.operator.crds:
            register_crds(self.store, self.scenario.operator.release)
        self.sim = (simulation or _simulation)(self.scenario, self.store)
        self.sim.seed()
        self.sim.kubelet.start_latency = pod_start_latency  # after seeding: what ran before the demo started is up
        self.server = ApiServer(self.store, self.sim, self.token, self.faults, self.scenario.rbac_deny)
        if not self.scenario.registry.url:
            self.server.image_catalog = self.sim.puller.catalog
        self._kubeconfig_arg = Path(kubeconfig_path) if kubeconfig_path else None
        self.tls = True if tls is None else tls
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self.ca_path: Path | None = None
        self.kubeconfig_path: Path = Path()
        self.url = ""
        self.registry_mirrors: dict[str, str] = {}
        """Registry host -> mirror URL this cluster's kubelet pulls through; written into the kubeconfig's marker."""
        self._runner: web.AppRunner | None = None
        self._driver: asyncio.Task[None] | None = None
        self._dirty = asyncio.Event()
        self._idle = asyncio.Event()
        self._unsubscribe: Callable[[], None] = lambda: None
        self.tick_errors: list[BaseException] = []

    async def __aenter__(self) -> Self:
        try:
            await self._start()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._dirty, self._idle = asyncio.Event(), asyncio.Event()
        loop_thread = threading.get_ident()

        def on_write(_event: WatchEvent) -> None:
            if threading.get_ident() == loop_thread:
                self._mark_dirty()
            else:
                loop.call_soon_threadsafe(self._mark_dirty)

        _, self._unsubscribe = self.store.subscribe(on_write)
        self._tmpdir = tempfile.TemporaryDirectory(prefix="gpu-wizard-demo-")
        folder = Path(self._tmpdir.name)
        context: ssl.SSLContext | None = None
        if self.tls:
            try:
                self.ca_path, key = tls.make_certificate(folder)
            except (OSError, ValueError) as exc:
                raise DemoStartError(f"cannot create the TLS certificate: {exc}") from None
            context = tls.server_context(self.ca_path, key)
        self._runner = web.AppRunner(
            self.server.application(), handler_cancellation=True, shutdown_timeout=2.0, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True, ssl_context=context)
        try:
            await site.start()
        except OSError as exc:
            raise DemoStartError(f"cannot listen on 127.0.0.1:{self.port}: {exc.strerror or exc}") from None
        self.port = int(self._runner.addresses[0][1])
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"
        self.server.server_address = f"127.0.0.1:{self.port}"
        self.registry_mirrors = self._registry_mirrors()
        self.kubeconfig_path = self._kubeconfig_arg.resolve() if self._kubeconfig_arg else folder / "kubeconfig"
        ca_pem = self.ca_path.read_bytes() if self.ca_path else None
        try:
            write_kubeconfig(
                self.kubeconfig_path, self.url, self.token, ca_pem, self.registry_mirrors, self.scenario.name
            )
        except OSError as exc:
            raise DemoStartError(f"cannot write the kubeconfig {self.kubeconfig_path}: {exc.strerror or exc}") from None
        self._driver = asyncio.create_task(self._drive(), name="demo-simulation")
        self._mark_dirty()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._unsubscribe()
        self.server.close_watches()
        if self._driver is not None:
            self._driver.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._driver
        if self._runner is not None:
            await self._runner.cleanup()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context trusting this cluster (None when it serves plain http)."""
        return tls.client_context(self.ca_path) if self.ca_path else None

    def registry_options(self) -> dict[str, Any]:
        """Keyword arguments for ``wizard.registry.client.RegistryClient`` that reach this cluster's images
        (for tests and benchmarks that hold the demo itself; the wizard reads the kubeconfig's marker)."""
        if not self.registry_mirrors:
            return {}
        locations = {host: url.split("://", 1)[1] for host, url in self.registry_mirrors.items()}
        insecure = sorted(
            {loc.split("/", 1)[0] for h, loc in locations.items() if self.registry_mirrors[h].startswith("http://")}
        )
        ca_data = self.ca_path.read_text(encoding="ascii") if self.ca_path else None
        options: dict[str, Any] = {"mirrors": locations}
        if insecure:
            options["insecure_registries"] = insecure
        if ca_data:
            options["ca_data"] = ca_data
        return options

    def _registry_mirrors(self) -> dict[str, str]:
        """Where this cluster's kubelet pulls each registry's images from ({}: the simulation has no image catalog)."""
        url = self.scenario.registry.url.rstrip("/")
        hosts = set(self.scenario.registry.catalog_hosts())
        if url:
            return {host: url for host in sorted(hosts)}
        if self.server.image_catalog is None:
            return {}
        hosts |= {repo.split("/", 1)[0] for repo in self.server.image_catalog}
        return {host: f"{self.url}/{host}" for host in sorted(hosts)}

    def _mark_dirty(self) -> None:
        self._idle.clear()
        self._dirty.set()

    async def _drive(self) -> None:
        """Tick the simulation after writes until it is stable, then wait for the next write (or its clock)."""
        while True:
            wake = self.sim.next_wake()
            if wake is None:
                await self._dirty.wait()
            else:  # a pod's sandbox (or a Job's deadline) is due without any write: tick then
                # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation that races the event
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wake + 0.01):
                        await self._dirty.wait()
                if not self._dirty.is_set():
                    self.sim.wake()
            self._dirty.clear()
            worked = False
            while True:
                try:
                    changed = await self.sim.tick()
                except Exception as exc:
                    log.exception("demo simulation tick failed")
                    self.tick_errors.append(exc)
                    changed = False
                if not changed:
                    break
                worked = True
                await asyncio.sleep(self.step_delay)
            if worked and self.freeze_settled:
                _freeze_survivors()
            # Stable: no pod is about to start (a far-off Job deadline is a timer, not work in progress).
            if not self._dirty.is_set() and not self.sim.starting():
                self._idle.set()

    async def settle(self, timeout: float = 30.0) -> None:
        """Wait until the simulation has reacted to every write so far and is stable."""
        await asyncio.sleep(0)
        await asyncio.wait_for(self._idle.wait(), timeout)
