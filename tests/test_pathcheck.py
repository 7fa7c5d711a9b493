"""Node-side path checks before apply (``Cluster.check_paths``) against the demo cluster's simulated hosts."""

from __future__ import annotations

import contextlib

import pytest

from tests.helpers.cluster import connected, preinstalled_plan, sle_plan, upstream_plan
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.errors import ClusterError
from wizard.cluster.facade import Cluster
from wizard.cluster.probes.probe import PROBE_LABEL
from wizard.engine.plan import Plan
from wizard.engine.results import Check, Status


async def run(cluster: Cluster, plan: Plan, **kwargs: object) -> list[Check]:
    return [check async for check in cluster.check_paths(plan, **kwargs)]  # type: ignore[arg-type]


async def probe_pods(cluster: Cluster) -> list[str]:
    pods = await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
    return [p["metadata"]["name"] for p in pods]


def by(checks: list[Check], name: str) -> dict[str, Check]:
    return {c.node: c for c in checks if c.check == name}


async def test_noexec_run_fails_the_driver_folder_on_every_gpu_node(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("noexec-run")) as cluster:
        checks = await run(cluster, upstream_plan())
        assert await probe_pods(cluster) == []
    driver, toolkit = by(checks, "driver-dir"), by(checks, "toolkit-dir")
    assert set(driver) == set(toolkit) == {"gpu-a10-01", "gpu-a10-02"}  # GPU nodes only, not cp-01
    for check in driver.values():
        assert check.status is Status.FAIL
        assert (
            "/run is mounted noexec: the containerized driver's nvidia-smi and libraries must execute" in check.message
        )
        assert "remount /run with exec" in check.hint
        assert check.data["noexec"] is True and check.data["nearest"] == "/run"
    assert all(c.status is Status.PASS for c in toolkit.values())  # /usr/local is writable and exec on Ubuntu
    assert checks[-1].line() == "✗ summary: path problems on 2 of 2 nodes: gpu-a10-01, gpu-a10-02"


async def test_read_only_usr_local_on_sle_micro_and_the_profile_default(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("sle-micro-precompiled")) as cluster:
        usr_local = await run(cluster, sle_plan(), toolkit_install_dir="/usr/local/nvidia")
        default = await run(cluster, sle_plan())  # no installDir: the OS profile's /run/nvidia/toolkit-install
    for check in by(usr_local, "toolkit-dir").values():
        assert check.status is Status.FAIL
        assert "not writable: /usr/local is on /, mounted read-only" in check.message
        assert "/run/nvidia/toolkit-install" in check.hint
    assert {c.status for c in by(usr_local, "driver-dir").values()} == {Status.PASS}
    toolkit = by(default, "toolkit-dir")
    assert set(toolkit) == {"gpu-h200-01", "gpu-h200-02"}
    assert all(c.status is Status.PASS and "/run/nvidia/toolkit-install" in c.message for c in toolkit.values())
    assert default[-1].line() == "✓ summary: host paths usable on all 2 nodes"


async def test_preinstalled_root_must_exist_and_one_node_can_be_picked(demo_cluster: ClusterFactory) -> None:
    plan = preinstalled_plan()
    plan.hostPaths.driverInstallDir = "/usr/local/glibc"
    async with connected(demo_cluster("preinstalled")) as cluster:
        node = sorted(n.name for n in (await cluster.discover()).gpu_nodes)[0]
        checks = await run(cluster, plan, nodes=[node])
        plain = await run(cluster, preinstalled_plan(), nodes=[node])
        with pytest.raises(ClusterError, match="no node named 'nope'"):
            await run(cluster, plan, nodes=["nope"])
    (driver,) = by(checks, "driver-dir").values()
    assert driver.status is Status.FAIL and driver.node == node
    assert (
        "/usr/local/glibc does not exist: hostPaths.driverInstallDir must be the host driver's root" in driver.message
    )
    assert [c.status for c in plain if c.check == "driver-dir"] == [Status.SKIP]  # the host driver lives under /


async def test_stopping_early_leaves_no_probe_pod(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("noexec-run")) as cluster:
        stream = cluster.check_paths(upstream_plan(), concurrency=1)
        async with contextlib.aclosing(stream):
            first = await anext(stream)
        assert first.node and await probe_pods(cluster) == []
