"""Streamed verification on the demo cluster, with the real loopback registry for digests."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from pathlib import Path

from tests.cluster_util import (
    SLE_TAG,
    by_node,
    collect,
    connected,
    preinstalled_plan,
    scenario,
    sle_plan,
    upstream_plan,
)
from tests.fixtures_demo import ClusterFactory
from tests.fixtures_registry import RegistryServer
from wizard.cluster.facade import Cluster
from wizard.cluster.probe import PROBE_LABEL
from wizard.cluster.verify import policy_checks
from wizard.demo.api.store import WatchEvent
from wizard.engine.plan import Plan
from wizard.engine.render import render
from wizard.engine.results import Check, Status
from wizard.registry.client import RegistryClient


async def _install(cluster: Cluster, plan: Plan, backups: Path) -> str:
    prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
    assert prepared.ok, prepared.errors
    assert (await cluster.apply(prepared, backup_dir=backups, allow_unverified_preinstalled=True)).ok
    final = None
    async for status in cluster.rollout(plan, interval=0.05, timeout=20):
        final = status
    assert final is not None
    return f"{final.phase}: {final.message}"


async def test_precompiled_install_verifies(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    probes: list[str] = []  # nvidia-driver-ctr has no host root: host checks need a probe pod, as on a real cluster

    def record(event: WatchEvent) -> None:
        if (
            event.resource == "pods"
            and event.type == "ADDED"
            and event.obj["metadata"]["name"].startswith("gpu-wizard-probe")
        ):
            probes.append(event.obj["spec"]["nodeName"])

    demo.call(lambda: demo.cluster.store.subscribe(record))
    async with connected(demo) as cluster:
        assert (await _install(cluster, sle_plan(), tmp_path)).startswith("ready")
        checks, lines = await collect(cluster.verify(sle_plan()))
        leftovers = await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
    assert sorted(probes) == ["gpu-h200-01", "gpu-h200-02"] and leftovers == []
    assert {c.status for c in by_node(checks, "toolkit-path").values()} == {Status.PASS}
    assert all(c.ok for c in checks), [c.line() for c in checks if not c.ok]
    image = f"registry.example.com/mlops/nvidia-driver:{SLE_TAG}"
    assert by_node(checks, "driver-image")["gpu-h200-01"].line() == f"✓ driver-image gpu-h200-01: {image}"
    smi = by_node(checks, "nvidia-smi")
    assert set(smi) == {"gpu-h200-01", "gpu-h200-02"}
    assert smi["gpu-h200-01"].message == "driver 580.126.09, CUDA 13.0, 8 × NVIDIA H200"
    assert any("Driver Version: 580.126.09" in line.text and line.node == "gpu-h200-02" for line in lines)
    assert set(by_node(checks, "containerd-config")) == {"gpu-h200-01", "gpu-h200-02"}
    assert checks[-1].line() == "✓ summary: all 2 GPU nodes verified"


async def test_image_digest_against_the_registry_catches_a_repushed_tag(
    demo_cluster: ClusterFactory, oci_registry: RegistryServer, tmp_path: Path
) -> None:
    repo = "mlops/nvidia-driver"
    pulled = oci_registry.push_image(repo, SLE_TAG, content=b"driver build 1")
    loopback = scenario("sle-micro-precompiled")
    loopback.registry = dataclasses.replace(loopback.registry, url=oci_registry.url)
    demo = demo_cluster(loopback)
    plan = sle_plan(repository=f"{oci_registry.host}/mlops")
    async with connected(demo) as cluster, RegistryClient(insecure_registries=[oci_registry.host]) as registry:
        assert (await _install(cluster, plan, tmp_path)).startswith("ready")
        checks, lines = await collect(cluster.verify(plan, registry=registry))
        digest = by_node(checks, "image-digest")
        assert {c.status for c in digest.values()} == {Status.PASS}
        assert digest["gpu-h200-01"].message == f"{pulled} matches the registry"

        repushed = oci_registry.push_image(repo, SLE_TAG, content=b"driver build 2")  # same tag, new image
        checks, lines = await collect(cluster.verify(plan, registry=registry))
    mismatch = by_node(checks, "image-digest")["gpu-h200-02"]
    assert mismatch.status is Status.FAIL
    assert (
        mismatch.message
        == f"the pod runs {pulled}, the registry's {oci_registry.host}/{repo}:{SLE_TAG} is now {repushed}"
    )
    assert "re-pushed" in mismatch.hint
    assert any(line.text == f"registry digest: {repushed}" and line.node == "gpu-h200-02" for line in lines)


async def test_missing_tag_is_named_per_node(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("missing-tuple")
    async with connected(demo) as cluster:
        outcome = await _install(cluster, sle_plan(), tmp_path)
        checks, _ = await collect(cluster.verify(sle_plan()))
    assert (
        outcome.startswith("failed: nvidia-driver-daemonset-")
        and "on gpu-b-01" in outcome
        and "ImagePullBackOff" in outcome
    )
    pod = by_node(checks, "driver-pod")["gpu-b-01"]
    assert pod.status is Status.FAIL and "ImagePullBackOff" in pod.message
    assert "nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5" in pod.message
    assert by_node(checks, "nvidia-smi").keys() == {"gpu-a-01", "gpu-a-02"}
    assert checks[-1].line() == "✗ summary: 1 of 3 GPU nodes failed: gpu-b-01"


async def test_noexec_run_is_flagged(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("noexec-run")
    async with connected(demo) as cluster:
        outcome = await _install(cluster, upstream_plan(), tmp_path)
        checks, _ = await collect(cluster.verify(upstream_plan()))
    assert outcome.startswith("failed:") and "keeps failing" in outcome
    driver_path = by_node(checks, "driver-path")
    assert {c.status for c in driver_path.values()} == {Status.FAIL}
    assert (
        driver_path["gpu-a10-01"].message == "/run/nvidia/driver is on /run, mounted noexec: binaries there cannot run"
    )
    assert by_node(checks, "toolkit-path")["gpu-a10-01"].status is Status.PASS  # /usr/local/nvidia is on /


async def test_a_failing_node_does_not_hold_up_the_others(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        await _install(cluster, sle_plan(), tmp_path)
        demo.faults.exec_fail_nodes = ["gpu-h200-01"]
        checks, _ = await collect(cluster.verify(sle_plan(), timeout=5))
    smi = by_node(checks, "nvidia-smi")
    assert smi["gpu-h200-01"].status is Status.FAIL and "HTTP 500" in smi["gpu-h200-01"].message
    assert smi["gpu-h200-02"].status is Status.PASS
    assert checks[-1].line() == "✗ summary: 1 of 2 GPU nodes failed: gpu-h200-01"


async def test_preinstalled_hosts_are_probed_and_cleaned_up(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    broken = scenario("preinstalled")
    broken.nodes.append(dataclasses.replace(broken.nodes[1], name="gpu-bad", count=1, host_driver_broken=True))
    demo = demo_cluster(broken)
    async with connected(demo) as cluster:
        await _install(cluster, preinstalled_plan(), tmp_path)
        checks, lines = await collect(cluster.verify(preinstalled_plan(), concurrency=2))
        leftovers = await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
    host = by_node(checks, "host-nvidia-smi")
    assert host["gpu-l40s-01"].status is Status.PASS and host["gpu-l40s-01"].message.startswith("driver 580.126.20")
    assert host["gpu-bad"].status is Status.FAIL
    assert {c.status for c in by_node(checks, "deploy-label").values()} <= {Status.PASS, Status.WARN}
    assert any("NVIDIA-SMI" in line.text and line.node == "gpu-l40s-02" for line in lines)
    assert cluster.host_verified == {"gpu-l40s-01", "gpu-l40s-02"}
    assert leftovers == []


async def test_cancelling_stops_cleanly_and_deletes_probe_pods(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("preinstalled")
    async with connected(demo) as cluster:
        await _install(cluster, preinstalled_plan(), tmp_path)
        demo.faults.exec_latency_ms = 2000
        started = time.monotonic()
        stream = cluster.verify(preinstalled_plan(), concurrency=1)
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, Check) and item.check == "deploy-label":
                    await asyncio.sleep(0.3)  # the probe pod is up, its exec hangs in the slow kubelet
                    break
        assert time.monotonic() - started < 2.0
        assert await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL) == []


def test_ready_with_no_gpu_nodes_is_not_success() -> None:
    policy = {
        "metadata": {"name": "cluster-policy"},
        "status": {
            "state": "ready",
            "namespace": "gpu-operator",
            "conditions": [{"type": "Ready", "status": "True", "reason": "NoGPUNodes", "message": "No GPU node found"}],
        },
    }
    (check,) = policy_checks(sle_plan(), policy, [])
    assert check.status is Status.FAIL
    assert check.line() == "✗ cluster-policy: cluster-policy reports ready but NoGPUNodes: No GPU node found"


async def test_image_check_names_a_missing_tag_and_its_mirror_source(
    demo_cluster: ClusterFactory, oci_registry: RegistryServer
) -> None:
    host = oci_registry.host
    source = oci_registry.push_image("upstream-check/nvidia-driver", SLE_TAG, content=b"published build")
    plan = sle_plan(repository=f"{host}/mirror-check", source=f"{host}/upstream-check")
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster, RegistryClient(insecure_registries=[host]) as registry:
        rendered = render(plan, await cluster.discover())
        (missing,) = await cluster.check_images(rendered, registry)
        oci_registry.push_image("mirror-check/nvidia-driver", SLE_TAG, content=b"published build")
        (present,) = await cluster.check_images(rendered, registry)
    assert missing.image == f"{host}/mirror-check/nvidia-driver:{SLE_TAG}"
    assert missing.nodes == ("gpu-h200-01", "gpu-h200-02")
    assert (missing.target.exists, missing.target.error, missing.ok) == (False, "", False)
    assert missing.source is not None and missing.source.digest == source and missing.mirrorable
    assert missing.catalog in ("validated", "published")
    assert present.ok and present.target.digest == source and not present.mirrorable
