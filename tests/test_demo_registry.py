"""The demo cluster's registry: the scenario catalog over the distribution API, as the kubelet sees it."""

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.cli.main import main
from wizard.cluster.facade import Cluster
from wizard.registry.client import RegistryClient

PRESENT = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
MISSING = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5"


async def test_catalog_tags_exist_with_the_kubelets_digest(demo_cluster: ClusterFactory) -> None:
    cluster = demo_cluster("missing-tuple")
    options: dict[str, Any] = cluster.registry_options()
    async with RegistryClient(**options) as registry:
        found = await registry.check_many([PRESENT, MISSING, "registry.example.com/other/image:1"])
        tags = await registry.list_tags("registry.example.com/mlops/nvidia-driver")
    present, missing, unknown = found.values()
    assert present.state == "present"
    expected = cluster.sim.puller.catalog["registry.example.com/mlops/nvidia-driver"][PRESENT.rsplit(":", 1)[1]]
    assert present.digest == expected
    assert missing.state == "missing" and missing.error == ""
    assert unknown.state == "missing"
    assert PRESENT.rsplit(":", 1)[1] in tags and MISSING.rsplit(":", 1)[1] not in tags


async def test_registry_needs_no_cluster_token_but_the_api_still_does(demo_cluster: ClusterFactory) -> None:
    import aiohttp

    cluster = demo_cluster("sle-micro-precompiled")
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{cluster.url}/v2/", ssl=cluster.ssl_context()) as resp:
            assert resp.status == 200
        async with session.get(f"{cluster.url}/api/v1/nodes", ssl=cluster.ssl_context()) as resp:
            assert resp.status == 401
        async with session.put(f"{cluster.url}/v2/x/manifests/y", ssl=cluster.ssl_context()) as resp:
            assert resp.status == 405


async def test_source_registries_are_answered_by_the_demo_too(demo_cluster: ClusterFactory) -> None:
    cluster = demo_cluster("sle-micro-precompiled")
    options: dict[str, Any] = cluster.registry_options()
    assert "docker.io" in options["mirrors"]
    source = PRESENT.replace("registry.example.com/mlops", "docker.io/alaudadockerhub")
    async with RegistryClient(**options) as registry:
        status = await registry.check(source)
    assert status.state == "present" and status.digest.startswith("sha256:")


def test_cli_through_a_kubeconfig_checks_digests_against_the_demo_registry(
    demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gpu-wizard demo serve`` in one terminal, the CLI with its kubeconfig in another: no real host is asked."""
    demo = demo_cluster("sle-micro-precompiled")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\n"
        "driver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n  source: docker.io/alaudadockerhub\n"
    )
    cluster = ["--kubeconfig", str(demo.kubeconfig_path)]
    backups = str(tmp_path / "backups")

    code = main(["apply", "--answers", str(answers), *cluster, "--yes", "--backup-dir", backups])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "images: 1 of 1 driver images present where the cluster pulls from" in err

    code = main(["verify", "--answers", str(answers), *cluster])
    out, err = capsys.readouterr()
    assert code == 0, out
    selector = "app.kubernetes.io/component=nvidia-driver"
    done = kubectl(demo, "get", "pods", "-n", "gpu-operator", "-l", selector, "-o", "json")
    pods = {p["spec"]["nodeName"]: p for p in json.loads(done.stdout)["items"]}
    assert sorted(pods) == ["gpu-h200-01", "gpu-h200-02"]
    for node, pod in pods.items():
        image_id = next(s["imageID"] for s in pod["status"]["containerStatuses"] if s["name"] == "nvidia-driver-ctr")
        digest = image_id.rsplit("@", 1)[1]
        assert f"✓ image-digest {node}: {digest} matches the registry\n" in out
    assert "unreachable" not in out and "does not resolve" not in out

    code = main(["mirror", "--answers", str(answers), *cluster, "--run"])
    out, err = capsys.readouterr()
    assert code == 2 and "skopeo copy" in out  # the plan is printed; copying into a simulated registry is refused
    assert "the demo cluster answers for docker.io, registry.example.com from its simulated catalog" in err


async def test_cluster_registry_options_route_every_host_to_the_demo(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("airgapped")
    async with connected(demo) as cluster:
        options = cluster.registry_options(["registry.airgap.local", "nvcr.io"])
        real = Cluster(cluster.gateway, dataclasses.replace(cluster.info, demo=False))
        assert real.registry_options(["registry.airgap.local"]) == {}  # a real cluster: ask the registries
    endpoint = demo.url.split("://", 1)[1]
    assert options["mirrors"] == {
        "nvcr.io": f"{endpoint}/nvcr.io",
        "registry.airgap.local": f"{endpoint}/registry.airgap.local",
    }
    assert options["ca_data"].startswith("-----BEGIN CERTIFICATE-----")
    async with RegistryClient(**options) as registry:
        found = await registry.check("registry.airgap.local/nvidia/driver:580.126.20-ubuntu22.04")
    assert (
        found.state == "present"
        and found.digest
        == demo.scenario.registry.catalog["registry.airgap.local/nvidia/driver"]["580.126.20-ubuntu22.04"]
    )


async def test_an_image_the_demo_registry_lacks_fails_to_pull_as_on_a_real_node(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    """The wizard calls ``nvcr.io/nvidia/driver:<SLE tag>`` missing: applied anyway, the kubelet cannot pull it
    either (ErrImagePull / ImagePullBackOff, the pod never ready), and the rollout fails instead of going Ready."""
    from tests.helpers.cluster import sle_plan
    from wizard.engine.render import render

    cluster_thread = demo_cluster("sle-micro-precompiled")
    async with connected(cluster_thread) as cluster:
        rendered = render(sle_plan(repository="nvcr.io/nvidia"), await cluster.discover())
        options: dict[str, Any] = cluster_thread.registry_options()
        async with RegistryClient(**options) as registry:
            statuses = await cluster.check_images(rendered, registry)
        assert statuses and all(not status.ok for status in statuses)  # what Preview blocks on
        assert (await cluster.apply(await cluster.prepare_apply(rendered), backup_dir=tmp_path)).ok
        last = None
        async for status in cluster.rollout(rendered.plan, interval=0.05, timeout=30):
            last = status
    assert last is not None and last.phase == "failed", last
    reasons = {pod.reason for pod in last.pods if pod.node.startswith("gpu-")}
    assert reasons & {"ErrImagePull", "ImagePullBackOff"}, last.pods
    assert any("not found" in pod.message for pod in last.pods), last.pods
