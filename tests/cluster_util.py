"""Helpers for the cluster-engine tests: scenarios, plans, kubeconfigs and a connection-dropping TCP proxy.

Everything here talks real HTTP to the demo cluster; the proxy only forwards bytes (and drops a
connection where a test asks), so the client and the server behave exactly as they would on a
network that fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from wizard.cluster import Cluster
from wizard.demo.scenario import Scenario, load_scenario
from wizard.demo.serve import DemoClusterThread
from wizard.plan import Plan
from wizard.results import Check, LogLine

KERNEL = "5.14.21-150500.55.166-default"
SLE_TAG = f"580.126.09.1-{KERNEL}-sle-micro5.5"


def scenario(name: str, **changes: Any) -> Scenario:
    """A bundled scenario with top-level fields replaced (``faults=``, ``rbac_deny=``…)."""
    loaded = load_scenario(name)
    for key, value in changes.items():
        setattr(loaded, key, value)
    return loaded


def sle_plan(repository: str = "registry.example.com/mlops", **driver: Any) -> Plan:
    """The precompiled SLE Micro plan of the ``sle-micro-precompiled`` scenario."""
    return Plan.model_validate(
        {"mode": "precompiled", "driver": {"version": "580.126.09.1", "repository": repository, **driver}}
    )


def upstream_plan(version: str = "580.126.20", **extra: Any) -> Plan:
    """An upstream plan pulling NVIDIA's public driver image."""
    return Plan.model_validate(
        {"mode": "upstream", "driver": {"version": version, "repository": "nvcr.io/nvidia"}, **extra}
    )


def preinstalled_plan() -> Plan:
    """Pre-installed host driver mode."""
    return Plan.model_validate({"mode": "preinstalled"})


@contextlib.asynccontextmanager
async def connected(demo: DemoClusterThread, **kwargs: Any) -> AsyncIterator[Cluster]:
    """A Cluster connected to a demo cluster through its kubeconfig."""
    cluster = await Cluster.connect(kubeconfig=str(demo.kubeconfig_path), **kwargs)
    try:
        yield cluster
    finally:
        await cluster.close()


async def collect(stream: AsyncIterator[Check | LogLine]) -> tuple[list[Check], list[LogLine]]:
    """All checks and log lines of a verification stream."""
    checks: list[Check] = []
    lines: list[LogLine] = []
    async for item in stream:
        (checks if isinstance(item, Check) else lines).append(item)  # type: ignore[arg-type]
    return checks, lines


def by_node(checks: list[Check], check: str) -> dict[str, Check]:
    """The checks of one kind, keyed by node."""
    return {c.node: c for c in checks if c.check == check}


def later(seconds: float, action: Callable[[], None]) -> threading.Timer:
    """Run ``action`` after ``seconds`` in a thread (e.g. switch a fault off while a call retries)."""
    timer = threading.Timer(seconds, action)
    timer.start()
    return timer


def kubeconfig(path: Path, server: str, *, token: str | None, ca: Path | None = None, context: str = "test") -> Path:
    """Write a kubeconfig with one context (no user credentials when ``token`` is None)."""
    ca_line = f"    certificate-authority: {ca}\n" if ca else ""
    user = f"    token: {token}\n" if token is not None else "    {}\n"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c-{context}\n  cluster:\n    server: {server}\n{ca_line}"
        f"users:\n- name: u-{context}\n  user:\n{user}"
        f"contexts:\n- name: {context}\n  context:\n    cluster: c-{context}\n    user: u-{context}\n"
        f"current-context: {context}\n"
    )
    return path


class DropProxy:
    """A TCP proxy in front of a plain-http demo cluster that can drop the connection of an apply.

    ``drop_before``: that many server-side-apply PATCHes (not dry-runs) are cut before they reach the
    server; ``drop_after``: that many reach the server, then the connection is cut before the answer.
    """

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.split("://", 1)[-1].partition(":")
        self.upstream = (host, int(port))
        self.drop_before = 0
        self.drop_after = 0
        self.dropped = 0
        self.url = ""
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> DropProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    @staticmethod
    def _is_apply(chunk: bytes) -> bool:
        head = chunk.split(b"\r\n", 1)[0]
        return head.startswith(b"PATCH ") and b"dryRun" not in head and b"fieldManager=gpu-wizard" in head

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        swallow = False  # once set, the server's answers no longer reach the client

        async def client_to_server() -> None:
            nonlocal swallow
            while chunk := await reader.read(65536):
                if self._is_apply(chunk) and self.drop_before > 0:
                    self.drop_before -= 1
                    self.dropped += 1
                    return
                if self._is_apply(chunk) and self.drop_after > 0:
                    self.drop_after -= 1
                    self.dropped += 1
                    swallow = True
                    up_writer.write(chunk)
                    await up_writer.drain()
                    await asyncio.sleep(0.3)  # the server acts; its answer never reaches the client
                    return
                up_writer.write(chunk)
                await up_writer.drain()

        async def server_to_client() -> None:
            while chunk := await up_reader.read(65536):
                if swallow:
                    continue
                writer.write(chunk)
                await writer.drain()

        tasks = [asyncio.create_task(client_to_server()), asyncio.create_task(server_to_client())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for w in (writer, up_writer):
            with contextlib.suppress(Exception):
                w.transport.abort()
