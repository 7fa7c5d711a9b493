"""The demo cluster on a thread of its own with its own event loop (:class:`DemoClusterThread`), for synchronous
test and benchmark code and the subprocesses they start (the product runs :class:`wizard.demo.cluster.DemoCluster`
in its own event loop: the TUI, ``gpu-wizard demo serve``, the classroom)."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from wizard.demo.cluster import DemoCluster
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
