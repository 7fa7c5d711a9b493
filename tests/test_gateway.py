"""Connecting like kubectl, bounded and retried calls, the node watch and exec, against the demo cluster over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cluster import connected, kubeconfig
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.registry import free_port
from wizard.cluster.access.transport import ExecResult
from wizard.cluster.errors import ApiError
from wizard.cluster.facade import Cluster, ClusterError, kube_contexts
from wizard.cluster.gateway.writes import MERGE_PATCH
from wizard.cluster.probes.probe import PROBE_CONTAINER, PROBE_LABEL, ProbePod
from wizard.engine.nodescript import Step, StepResult


@pytest.fixture(scope="module")
def demo(demo_cluster_module: ClusterFactory) -> Iterator[DemoClusterThread]:
    cluster = demo_cluster_module("sle-micro-precompiled")
    yield cluster


@pytest.fixture(autouse=True)
def _no_faults(demo: DemoClusterThread) -> Iterator[None]:
    yield
    demo.faults.clear()
    demo.faults.error_code = 500
    demo.faults.injected.clear()


async def test_connect_reads_the_version_and_knows_the_demo(demo: DemoClusterThread) -> None:
    async with connected(demo) as cluster:
        assert cluster.info.context == "gpu-wizard-demo"
        assert cluster.info.server == demo.url
        assert cluster.info.version.startswith("v1.")
        assert cluster.info.demo is True


def test_kubeconfig_list_merges_like_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = kubeconfig(tmp_path / "a", "https://a.example:6443", token="x", context="alpha")
    second = kubeconfig(tmp_path / "b", "https://b.example:6443", token="y", context="beta")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    names, current = kube_contexts()
    assert names == ["alpha", "beta"]
    assert current == "alpha"  # the first file setting current-context wins, as in kubectl
    assert kube_contexts(str(second)) == (["beta"], "beta")


async def test_unknown_context_names_the_valid_ones(demo: DemoClusterThread) -> None:
    with pytest.raises(ClusterError) as err:
        await Cluster.connect(kubeconfig=str(demo.kubeconfig_path), context="prod")
    assert "'prod' is not in the kubeconfig" in err.value.message
    assert "gpu-wizard-demo" in err.value.hint


def test_bad_kubeconfig_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(ClusterError, match="not valid YAML"):
        kube_contexts(str(bad))
    with pytest.raises(ClusterError, match="no kubeconfig found") as err:
        kube_contexts(str(tmp_path / "nothing-here"))
    assert "--kubeconfig" in err.value.hint


async def test_unreachable_server(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "k", f"http://127.0.0.1:{free_port()}", token="t")
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"cannot connect to http://127\.0\.0\.1") as err:
        await Cluster.connect(kubeconfig=str(path), timeout=10.0)
    assert "context points at the right server" in err.value.hint
    assert time.monotonic() - started < 5.0  # refused at once: no waiting for the timeout, no retries


async def test_tls_failure_without_the_cluster_ca(demo: DemoClusterThread, tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "k", demo.url, token=demo.token)  # https, but no certificate-authority
    with pytest.raises(ClusterError, match=r"TLS verification of https://127\.0\.0\.1") as err:
        await Cluster.connect(kubeconfig=str(path))
    assert "certificate-authority" in err.value.hint


@pytest.mark.parametrize("token", ["expired-or-wrong", None], ids=["bad-token", "no-credentials"])
async def test_rejected_or_missing_credentials(demo: DemoClusterThread, tmp_path: Path, token: str | None) -> None:
    path = kubeconfig(tmp_path / "k", demo.url, token=token, ca=demo.ca_path)
    with pytest.raises(ClusterError, match="rejected the credentials of context 'test' \\(401\\)") as err:
        await Cluster.connect(kubeconfig=str(path))
    assert "log in again" in err.value.hint


@pytest.mark.parametrize(("code", "minimum"), [(500, 0.5), (429, 1.9)], ids=["500-backoff", "429-retry-after"])
async def test_transient_errors_are_retried(demo: DemoClusterThread, code: int, minimum: float) -> None:
    async with connected(demo) as cluster:
        faults = demo.faults
        faults.error_code, faults.retry_after_s, faults.error_rate, faults.budget = code, 1, 1.0, 2
        faults.only = ["/api/v1/nodes"]
        started = time.monotonic()
        facts = await cluster.discover()
        elapsed = time.monotonic() - started
    assert [n.name for n in facts.gpu_nodes] == ["gpu-h200-01", "gpu-h200-02"]
    assert faults.injected["error"] == 2  # two failed attempts, the third one served
    assert elapsed >= minimum  # 0.2 + 0.4 s of backoff; 429 waited the server's Retry-After: 1 twice


async def test_dropped_connections_are_retried_for_reads(demo: DemoClusterThread) -> None:
    async with connected(demo) as cluster:
        demo.faults.drop_rate, demo.faults.only, demo.faults.budget = 1.0, ["/api/v1/nodes"], 3
        facts = await cluster.discover()
    assert len(facts.nodes) == 3
    assert demo.faults.injected["drop"] == 3


async def test_writes_are_not_retried_on_a_server_error(demo: DemoClusterThread) -> None:
    async with connected(demo) as cluster:
        demo.faults.error_code, demo.faults.error_rate, demo.faults.methods = 500, 1.0, ["POST"]
        demo.faults.only = ["/api/v1/namespaces/gpu-operator/pods"]
        with pytest.raises(ApiError) as err:
            await cluster.gateway.create_pod("gpu-operator", {"metadata": {"name": "x"}, "spec": {"containers": []}})
        assert err.value.status == 500
        assert demo.faults.injected["error"] == 1  # one attempt: the server may have acted


async def test_every_call_is_bounded_by_its_timeout(demo: DemoClusterThread) -> None:
    async with connected(demo, timeout=0.4) as cluster:
        demo.faults.latency_ms, demo.faults.only = 3000, ["/api/v1/nodes"]
        started = time.monotonic()
        with pytest.raises(ClusterError, match=r"no answer from .* within 0\.4s"):
            await cluster.discover()
        assert time.monotonic() - started < 1.5


async def test_node_watch_follows_changes_and_relists_after_410(demo: DemoClusterThread) -> None:
    async with connected(demo) as cluster:
        await cluster.discover()
        events: asyncio.Queue[tuple[str, str, str]] = asyncio.Queue()

        async def follow() -> None:
            async for kind, facts in cluster.watch_nodes():
                events.put_nowait((kind, facts.name, facts.labels.get("team", "")))

        task = asyncio.create_task(follow())
        try:
            patch = cluster.gateway.raw(cluster.gateway.core, "patch_node")
            await asyncio.sleep(0.2)
            await cluster.gateway.call(
                "label",
                patch,
                "gpu-h200-01",
                {"metadata": {"labels": {"team": "a"}}},
                safe=False,
                _content_type=MERGE_PATCH,
            )
            assert await asyncio.wait_for(_next_for(events, "gpu-h200-01", "a"), 5) == "MODIFIED"
            demo.faults.watch_expiry_s = 0.3  # the server ends watches with 410 Gone: the engine lists again
            await asyncio.sleep(0.8)
            demo.faults.watch_expiry_s = 0
            await cluster.gateway.call(
                "label",
                patch,
                "gpu-h200-02",
                {"metadata": {"labels": {"team": "b"}}},
                safe=False,
                _content_type=MERGE_PATCH,
            )
            assert await asyncio.wait_for(_next_for(events, "gpu-h200-02", "b"), 5) in ("MODIFIED", "ADDED")
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task


async def _next_for(events: asyncio.Queue[tuple[str, str, str]], node: str, team: str) -> str:
    while True:
        kind, name, label = await events.get()
        if name == node and label == team:
            return kind


async def test_exec_streams_lines_and_reports_the_exit_code(demo: DemoClusterThread) -> None:
    async with connected(demo) as cluster:
        gateway = cluster.gateway
        lines: list[tuple[str, str]] = []
        async with ProbePod(gateway, "gpu-h200-01", "gpu-operator", "busybox:1.36", timeout=10) as shell:
            pod = shell.pod

            async def run(*argv: str) -> ExecResult:
                return await gateway.exec(
                    "gpu-operator",
                    pod,
                    PROBE_CONTAINER,
                    ["chroot", "/host", *argv],
                    on_lines=lambda s, batch: lines.extend((s, t) for t in batch),
                )

            found = await run("grep", "PRETTY_NAME", "/etc/os-release")
            missing = await run("nvidia-smi")
            failing = await run("false")
            steps = [
                Step("a", ("uname", "-r"), host=True),
                Step("b", ("false",), host=True),
                Step("c", ("nvidia-smi",), host=True),
            ]
            results = await shell.run_steps(steps, lambda s, t: None)
        assert found.exit_code == 0
        assert lines[0] == ("stdout", 'PRETTY_NAME="SUSE Linux Enterprise Micro 5.5"')
        assert missing.exit_code == 127 and "nvidia-smi" in missing.stderr  # no host driver on this node
        assert failing.exit_code == 1
        # One exec, three steps: each with its own output and exit status.
        assert results[0] == StepResult("5.14.21-150500.55.166-default", 0)
        assert results[1] == StepResult("", 1)
        assert results[2].exit_code == 127 and "nvidia-smi" in results[2].output
        assert await gateway.read_pod("gpu-operator", pod) is None  # the probe pod is gone
        assert await gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL) == []


async def test_node_pages_read_ahead_and_close_cleanly(demo: DemoClusterThread) -> None:
    """The watch cache's paged list (discovery's): the next page is requested ahead, and cancelled on close."""
    from wizard.cluster.core.watchcache import WatchCache

    async with connected(demo) as cluster:
        nodes = WatchCache(cluster.gateway, "nodes", page_size=1)
        pages = [page async for page in nodes.pages()]
        listed = sorted(item["metadata"]["name"] for page in pages for item in page["items"])
        assert len(pages) > 1 and listed == sorted(n.name for n in (await cluster.discover()).nodes)
        before = cluster.gateway.stats.requests
        async with contextlib.aclosing(nodes.pages()) as first_only:
            async for _ in first_only:
                break
        # the first page and the read-ahead of the second (cancelled on close): nothing left running
        assert cluster.gateway.stats.requests - before <= 2
        pending = [t for t in asyncio.all_tasks() if "list_page" in repr(t.get_coro())]
        assert not pending
        assert gc.isenabled()  # paused only while the pages were read
