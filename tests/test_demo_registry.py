"""The demo cluster's registry: the scenario catalog over the distribution API, as the kubelet sees it."""

from typing import Any

from tests.fixtures_demo import ClusterFactory
from wizard.registry import RegistryClient

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
