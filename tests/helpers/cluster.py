"""Helpers for the cluster-engine tests: scenarios, plans, kubeconfigs and stream collection.

Everything here talks real HTTP to the demo cluster; failures are injected by the demo's own faults.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from tests.helpers.demo_thread import DemoClusterThread
from wizard.cluster.facade import Cluster
from wizard.demo.scenarios.scenario import Scenario, load_scenario
from wizard.engine.plan import Plan
from wizard.engine.results import Check, LogLine

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


def fleet_kubeconfig(
    path: Path, demos: Mapping[str, DemoClusterThread | Path], unreachable: tuple[str, ...] = ()
) -> Path:
    """One kubeconfig with a context per demo cluster (or demo kubeconfig file; its cluster, user and marker renamed
    to the context's name), and for each of ``unreachable`` a context whose server refuses connections (port 1)."""
    import json

    from ruamel.yaml import YAML

    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
    for name, demo in demos.items():
        source = demo if isinstance(demo, Path) else demo.kubeconfig_path
        doc = YAML(typ="safe").load(source.read_text(encoding="utf-8"))
        merged["clusters"].append({"name": name, "cluster": doc["clusters"][0]["cluster"]})
        merged["users"].append({"name": name, "user": doc["users"][0]["user"]})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    for name in unreachable:
        merged["clusters"].append({"name": name, "cluster": {"server": "https://127.0.0.1:1"}})
        merged["users"].append({"name": name, "user": {"token": "none"}})
        merged["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    merged["current-context"] = next(iter(demos))
    path.write_text(json.dumps(merged, indent=1), encoding="utf-8")
    path.chmod(0o600)
    return path
