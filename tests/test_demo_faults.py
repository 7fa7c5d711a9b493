"""The demo cluster's fault switches a reliability test relies on: budgets, method filters, drops after acting, counts."""

from __future__ import annotations

import asyncio

import pytest

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from wizard.cluster.errors import ApiError, ClusterError, ConnectionDropped


async def test_a_budget_makes_a_fault_transient_and_every_injection_is_counted(faults_demo: DemoClusterThread) -> None:
    async with connected(faults_demo) as cluster:
        faults_demo.faults.error_rate, faults_demo.faults.budget, faults_demo.faults.only = 1.0, 2, ["/api/v1/nodes"]
        facts = await cluster.discover()  # two 500s, then served: the gateway retries reads
        assert len(facts.nodes) == 3
        assert faults_demo.faults.injected == {"error": 2} and faults_demo.faults.budget == 0
        assert cluster.gateway.stats.retries == 2


async def test_method_filter_spares_the_reads(faults_demo: DemoClusterThread) -> None:
    async with connected(faults_demo) as cluster:
        faults_demo.faults.error_rate, faults_demo.faults.methods = 1.0, ["POST"]
        assert len((await cluster.discover()).nodes) == 3  # GET is not faulted
        with pytest.raises(ApiError) as err:
            await cluster.gateway.create_pod("gpu-operator", {"metadata": {"name": "x"}, "spec": {"containers": []}})
        assert err.value.status == 500 and faults_demo.faults.injected["error"] == 1


async def test_drop_after_acting_hides_an_answer_the_server_gave(faults_demo: DemoClusterThread) -> None:
    body = {"metadata": {"name": "dropped-after"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    async with connected(faults_demo) as cluster:
        faults_demo.faults.drop_rate, faults_demo.faults.drop_after, faults_demo.faults.methods = 1.0, True, ["POST"]
        with pytest.raises(ConnectionDropped):
            await cluster.gateway.create_pod("gpu-operator", body)
        faults_demo.faults.clear()
        assert await cluster.gateway.read_pod("gpu-operator", "dropped-after") is not None  # it was created
        await cluster.gateway.delete_pod("gpu-operator", "dropped-after")
    assert faults_demo.faults.injected == {"drop": 1}


async def test_watch_expiry_and_latency_are_counted_within_the_budget(faults_demo: DemoClusterThread) -> None:
    async with connected(faults_demo, timeout=0.3) as cluster:
        # plain lists (discover would start the session's node watch, which would spend the budget)
        listed = await cluster.gateway.list_page("nodes")
        faults_demo.faults.watch_expiry_s, faults_demo.faults.budget = 0.2, 1
        events = cluster.gateway.watch_nodes(listed["metadata"]["resourceVersion"], timeout_seconds=1)
        with pytest.raises(ClusterError, match="watch expired"):
            async for _ in events:
                pass
        assert faults_demo.faults.injected == {"watch_expiry": 1}
        faults_demo.faults.latency_ms, faults_demo.faults.budget, faults_demo.faults.watch_expiry_s = 1000, 1, 0
        with pytest.raises(ClusterError, match=r"within 0\.3s"):
            await cluster.gateway.list_page("nodes")
        await asyncio.sleep(0.8)  # let the slow request finish on the server
        assert len((await cluster.gateway.list_page("nodes"))["items"]) == 3  # budget spent: fast again
    assert faults_demo.faults.injected == {"watch_expiry": 1, "latency": 1}
