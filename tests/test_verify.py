"""Streamed verification on the demo cluster, with the real loopback registry for digests."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as _cli
from tests.helpers.cluster import (
    SLE_TAG,
    by_node,
    collect,
    connected,
    preinstalled_plan,
    scenario,
    sle_plan,
    upstream_plan,
)
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.install import install_and_roll_out
from tests.helpers.pull_secret import PULL_SECRET, add_pull_secret
from wizard.cluster.probes.probe import PROBE_LABEL
from wizard.cluster.verification.verify import policy_checks
from wizard.demo.api.store import WatchEvent
from wizard.engine.registry_routes import registry_hosts
from wizard.engine.render import render
from wizard.engine.results import Check, Status
from wizard.registry.client import RegistryClient


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
        assert (await install_and_roll_out(cluster, sle_plan(), tmp_path)).startswith("ready")
        # the demo advertises its registry: the digest checks really run
        options = cluster.registry_options(registry_hosts(sle_plan()))
        async with RegistryClient(**options) as registry:
            checks, lines = await collect(cluster.verify(sle_plan(), registry=registry))
        leftovers = await cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
        probes_of_one_run = sorted(probes)
        unasked, _ = await collect(cluster.verify(sle_plan(), no_registry="--no-registry was given"))
    assert probes_of_one_run == ["gpu-h200-01", "gpu-h200-02"] and leftovers == []
    assert {c.status for c in by_node(checks, "toolkit-path").values()} == {Status.PASS}
    assert all(c.status in (Status.PASS, Status.WARN) for c in checks), [c.line() for c in checks if not c.ok]
    assert {c.status for c in by_node(checks, "image-digest").values()} == {Status.PASS}
    image = f"registry.example.com/mlops/nvidia-driver:{SLE_TAG}"
    assert by_node(checks, "driver-image")["gpu-h200-01"].line() == f"✓ driver-image gpu-h200-01: {image}"
    smi = by_node(checks, "nvidia-smi")
    assert set(smi) == {"gpu-h200-01", "gpu-h200-02"}
    assert smi["gpu-h200-01"].message == "driver 580.126.09, CUDA 13.0, 8 × NVIDIA H200"
    assert any("Driver Version: 580.126.09" in line.text and line.node == "gpu-h200-02" for line in lines)
    assert set(by_node(checks, "containerd-config")) == {"gpu-h200-01", "gpu-h200-02"}
    assert checks[-1].line() == "✓ summary: all 2 GPU nodes verified"
    # without a registry the digest checks could not run: SKIPPED with the reason, never "all verified"
    skipped = by_node(unasked, "image-digest")
    assert skipped["gpu-h200-01"].line() == (
        "- SKIPPED image-digest gpu-h200-01: registry digest not checked: --no-registry was given"
    )
    assert skipped["gpu-h200-02"].as_dict()["status"] == "skipped"
    passed = sum(1 for c in unasked if c.node and c.status is not Status.SKIP)
    assert unasked[-1].status is Status.SKIP
    assert unasked[-1].message == (
        f"2 GPU nodes: {passed} checks passed, 2 SKIPPED (image-digest: --no-registry was given)"
    )


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
        assert (await install_and_roll_out(cluster, plan, tmp_path)).startswith("ready")
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
        outcome = await install_and_roll_out(cluster, sle_plan(), tmp_path)
        checks, _ = await collect(cluster.verify(sle_plan()))
    assert (
        outcome.startswith("failed: nvidia-driver-daemonset-")
        and "on gpu-b-01" in outcome
        and ("ImagePullBackOff" in outcome or "ErrImagePull" in outcome)  # the follower may catch the first pull's
        and "not found" in outcome
    )
    pod = by_node(checks, "driver-pod")["gpu-b-01"]
    assert pod.status is Status.FAIL and "ImagePullBackOff" in pod.message
    assert "nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5" in pod.message
    assert by_node(checks, "nvidia-smi").keys() == {"gpu-a-01", "gpu-a-02"}
    assert checks[-1].line() == "✗ summary: 1 of 3 GPU nodes failed: gpu-b-01 (2 checks SKIPPED)"


async def test_mig_devices_are_not_taken_for_missing_gpus(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    """One A30 split into four MIG devices advertises nvidia.com/gpu: 4 (strategy single): no shortfall warning."""
    demo = demo_cluster("mig")
    async with connected(demo) as cluster:
        assert (await install_and_roll_out(cluster, upstream_plan(), tmp_path)).startswith("ready")
        checks, _ = await collect(cluster.verify(upstream_plan()))
    smi = by_node(checks, "nvidia-smi")["gpu-a30-01"]
    assert smi.status is Status.PASS, smi.line()
    assert smi.message == "driver 580.126.20, CUDA 13.0, 1 × NVIDIA A30 (4 MIG devices)"


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
async def test_noexec_run_is_flagged(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("noexec-run")
    async with connected(demo) as cluster:
        outcome = await install_and_roll_out(cluster, upstream_plan(), tmp_path)
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
        await install_and_roll_out(cluster, sle_plan(), tmp_path)
        demo.faults.exec_fail_nodes = ["gpu-h200-01"]
        checks, _ = await collect(cluster.verify(sle_plan(), timeout=5))
    smi = by_node(checks, "nvidia-smi")
    assert smi["gpu-h200-01"].status is Status.FAIL and "HTTP 500" in smi["gpu-h200-01"].message
    assert smi["gpu-h200-02"].status is Status.PASS
    assert checks[-1].line() == "✗ summary: 1 of 2 GPU nodes failed: gpu-h200-01 (2 checks SKIPPED)"


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
async def test_preinstalled_hosts_are_probed_and_cleaned_up(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    broken = scenario("preinstalled")
    broken.nodes.append(dataclasses.replace(broken.nodes[1], name="gpu-bad", count=1, host_driver_broken=True))
    demo = demo_cluster(broken)
    async with connected(demo) as cluster:
        await install_and_roll_out(cluster, preinstalled_plan(), tmp_path)
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
        await install_and_roll_out(cluster, preinstalled_plan(), tmp_path)
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


def test_cli_verify_with_a_wrong_registry_password_is_skipped_not_verified(
    demo_cluster: ClusterFactory,
    oci_registry_auth: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry = oci_registry_auth
    host = registry.host
    registry.push_image("skiptest/nvidia-driver", SLE_TAG, content=b"skip test")
    world = scenario("sle-micro-precompiled")
    world.registry = dataclasses.replace(world.registry, url=registry.url)
    demo = demo_cluster(world)
    add_pull_secret(demo.store, host, registry.username, registry.password)  # the kubelet pulls with it
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: {host}/skiptest\n"
        f"  imagePullSecrets: [{PULL_SECRET}]\n"
    )
    wrong = tmp_path / "wrong.json"
    token = base64.b64encode(f"{registry.username}:wrong-password".encode()).decode()
    wrong.write_text(json.dumps({"auths": {host: {"auth": token}}}))
    cluster = ["--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path)]
    code, _, err = _cli(capsys, "apply", *cluster, "--yes", "--no-registry", "--backup-dir", str(tmp_path / "b"))
    assert code == 0, err
    image = f"{host}/skiptest/nvidia-driver:{SLE_TAG}"

    creds = ["--registry-auth-file", str(wrong), "--insecure-registry", host]
    code, out, err = _cli(capsys, "verify", *cluster, *creds)
    assert code == 1, out + err
    skipped = [line for line in out.splitlines() if line.startswith("- SKIPPED image-digest")]
    assert len(skipped) == 2 and f"cannot read the registry digest of {image}: " in skipped[0]
    assert f"unauthorized: {host} refused access to skiptest/nvidia-driver" in skipped[0]
    assert "✓ driver-image gpu-h200-01" in out and "verified" not in out.splitlines()[-1]
    assert out.splitlines()[-2].startswith("- SKIPPED summary: 2 GPU nodes: ")
    assert ", 2 SKIPPED (image-digest: cannot read the registry digest of" in out.splitlines()[-2]
    assert "pass --allow-skipped to accept them" in err

    code, out, err = _cli(capsys, "verify", *cluster, *creds, "--allow-skipped")
    assert code == 0 and out.count("- SKIPPED image-digest") == 2, out + err
    assert "2 checks SKIPPED; exit 0 because of --allow-skipped" in err

    code, out, _ = _cli(capsys, "verify", *cluster, *creds, "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False and report["verified"] is False
    digests = [c for c in report["checks"] if c["check"] == "image-digest"]
    assert {c["status"] for c in digests} == {"skipped"}
    assert {s["node"] for s in report["skipped"]} == {"gpu-h200-01", "gpu-h200-02"}
    assert all(s["reason"].startswith(f"cannot read the registry digest of {image}") for s in report["skipped"])

    code, out, _ = _cli(capsys, "verify", *cluster, "--no-registry", "-o", "json")
    report = json.loads(out)
    assert code == 1 and [s["reason"] for s in report["skipped"]] == ["--no-registry was given"] * 2
    code, out, _ = _cli(capsys, "verify", *cluster, "--no-registry", "--allow-skipped", "-o", "json")
    assert code == 0 and json.loads(out)["ok"] is True and json.loads(out)["verified"] is False

    good = tmp_path / "good.json"
    token = base64.b64encode(f"{registry.username}:{registry.password}".encode()).decode()
    good.write_text(json.dumps({"auths": {host: {"auth": token}}}))
    code, out, err = _cli(capsys, "verify", *cluster, "--registry-auth-file", str(good), "--insecure-registry", host)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err


def test_a_probe_daemonset_that_cannot_be_deleted_is_a_warning_with_the_kubectl_command(
    demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("preinstalled")
    answers = tmp_path / "answers.yaml"
    answers.write_text("version: 1\nmode: preinstalled\n")
    argv = ["--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path)]
    apply = ["--yes", "--backup-dir", str(tmp_path / "b"), "--no-wait", "--allow-unverified-preinstalled"]
    code, _, err = _cli(capsys, "apply", *argv, *apply)
    assert code == 0, err
    faults = demo.faults
    faults.only, faults.methods, faults.error_rate = (
        [
            "/apis/apps/v1/namespaces/gpu-operator/daemonsets/gpu-wizard-probe-",
            "/apis/batch/v1/namespaces/gpu-operator/jobs/gpu-wizard-probe-",  # its deadline Job would take it along
        ],
        ["DELETE"],
        1.0,
    )
    try:
        code, out, err = _cli(capsys, "verify", *argv)
    finally:
        faults.clear()
    assert code == 0, out + err  # the checks passed; what was left behind is a warning, not hidden
    selector = "app.kubernetes.io/managed-by=gpu-wizard"
    left = json.loads(kubectl(demo, "get", "daemonsets", "-n", "gpu-operator", "-l", selector, "-o", "json").stdout)
    names = [ds["metadata"]["name"] for ds in left["items"]]
    assert len(names) == 1
    for kind in ("daemonset", "job"):
        command = f"kubectl delete {kind} -n gpu-operator {names[0]}"
        warning = f"gpu-wizard: warning: privileged probe {kind} gpu-operator/{names[0]} could not be deleted ("
        assert warning in err and f"; delete it: {command}\n" in err
        assert f"! probe-pod: privileged probe {kind} gpu-operator/{names[0]} could not be deleted" in out
        assert out.count(f"delete it: {command}") == 1  # reported once
        kubectl(demo, "delete", kind, "-n", "gpu-operator", names[0])  # the printed command works as written
    demo.settle()
    for kind in ("jobs", "daemonsets", "pods"):
        found = json.loads(kubectl(demo, "get", kind, "-n", "gpu-operator", "-l", selector, "-o", "json").stdout)
        assert found["items"] == []


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
async def test_mixed_os_under_clusterpolicy_names_the_operators_choice(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The operator reads one OS tag for every node (informer order): verify says which and what it means."""
    demo = demo_cluster("mixed-os")
    async with connected(demo) as cluster:
        await install_and_roll_out(cluster, upstream_plan(), tmp_path)
        checks, _ = await collect(cluster.verify(upstream_plan(), no_registry="not asked in this test"))
    images = by_node(checks, "driver-image")
    assert images["gpu-01"].status is Status.PASS and images["gpu-02"].status is Status.PASS
    rhel = images["gpu-03"]
    assert rhel.status is Status.FAIL
    assert "the operator took the cluster-wide OS tag ubuntu22.04" in rhel.message and "#2471" in rhel.message
    assert "this node runs rhel9" in rhel.message and "NVIDIADriver" in (rhel.hint or "")
