"""The demo API server against the official ``kubernetes`` client, sync and ``kubernetes.aio``, over real HTTPS.

One demo cluster (two SLE Micro GPU nodes and a CPU node, the real simulation behind it) serves the
whole module; tests that inject faults reset them afterwards.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.demo.api.store import Store
from wizard.demo.scenarios.scenario import NodeSpec, RegistrySpec, Scenario

MERGE = "application/merge-patch+json"

KERNEL = "5.14.21-150500.55.166-default"
DRIVER_TAG = f"580.126.09.1-{KERNEL}-sle-micro5.5"
GROUP, V1, PLURAL = "nvidia.com", "v1", "clusterpolicies"
REQUIRED_SECTIONS = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "gfd", "nodeStatusExporter", "operator")


def scenario(gpu_nodes: int = 2) -> Scenario:
    """SLE Micro 5.5 GPU nodes plus one CPU node; the precompiled R580 tuple is published."""
    sle = NodeSpec(
        name="cpu", os_id="sle-micro", os_version="5.5", os_image="SUSE Linux Enterprise Micro 5.5", kernel=KERNEL
    )
    return Scenario(
        name="api-test",
        nodes=[replace(sle, name="gpu", gpu_product="NVIDIA-H200", gpu_count=8, count=gpu_nodes), sle],
        registry=RegistrySpec(
            catalog={"registry.example.com/mlops/nvidia-driver": {DRIVER_TAG: "sha256:" + "a" * 64}},
            hosts=["registry.example.com"],
        ),
        rbac_deny=[{"verb": "delete", "resource": "nodes", "group": ""}],
    )


def policy(name: str, version: str = "580.126.09.1", **driver: Any) -> dict[str, Any]:
    """A minimal ClusterPolicy valid for the CRD, precompiled from the scenario's registry."""
    spec: dict[str, Any] = {section: {} for section in REQUIRED_SECTIONS}
    spec["driver"] = {
        "version": version,
        "usePrecompiled": True,
        "repository": "registry.example.com/mlops",
        "image": "nvidia-driver",
        **driver,
    }
    spec["toolkit"] = {"installDir": "/run/nvidia/toolkit-install"}
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": name}, "spec": spec}


@pytest.fixture(scope="module")
def cluster(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    """The module's demo cluster with one ClusterPolicy applied and the driver pods running."""
    demo = demo_cluster_module(scenario())
    api = client.CustomObjectsApi(config.new_client_from_config(str(demo.kubeconfig_path)))
    api.create_cluster_custom_object(GROUP, V1, PLURAL, policy("cluster-policy"))
    demo.settle()
    return demo


@pytest.fixture(autouse=True)
def _faults_off(cluster: DemoClusterThread) -> Iterator[None]:
    yield
    cluster.faults.clear()


@pytest.fixture
def core(cluster: DemoClusterThread) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig_path)))


@pytest.fixture
def custom(cluster: DemoClusterThread) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(config.new_client_from_config(str(cluster.kubeconfig_path)))


def _driver_pod(core: client.CoreV1Api) -> client.V1Pod:
    pods = core.list_namespaced_pod("gpu-operator", label_selector="app.kubernetes.io/component=nvidia-driver").items
    assert pods, "the simulation created no driver pods"
    return pods[0]


def _raw(cluster: DemoClusterThread, path: str, token: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
    request = urllib.request.Request(cluster.url + path)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    context: ssl.SSLContext | None = cluster.ssl_context()
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return resp.status, json.loads(resp.read()), dict(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), dict(err.headers)


# -- discovery and auth ---------------------------------------------------------------------------


def test_version_says_it_is_the_demo(cluster: DemoClusterThread) -> None:
    info = client.VersionApi(config.new_client_from_config(str(cluster.kubeconfig_path))).get_code()
    assert (info.major, info.minor) == ("1", "33")
    assert "gpu-wizard-demo" in info.git_version and "gpu-wizard demo" in info.platform


def test_discovery_lists_the_operator_group(cluster: DemoClusterThread) -> None:
    api_client = config.new_client_from_config(str(cluster.kubeconfig_path))
    groups = {g.name: [v.version for v in g.versions] for g in client.ApisApi(api_client).get_api_versions().groups}
    assert groups["nvidia.com"] == ["v1", "v1alpha1"]
    assert {"apps", "apiextensions.k8s.io", "authorization.k8s.io"} <= groups.keys()
    resources = client.CustomObjectsApi(api_client).get_api_resources(GROUP, V1).resources
    assert [r.name for r in resources] == ["clusterpolicies", "clusterpolicies/status"]


def test_requests_without_the_token_get_401(cluster: DemoClusterThread) -> None:
    code, body, _ = _raw(cluster, "/api/v1/nodes", token=None)
    assert (code, body["kind"], body["reason"]) == (401, "Status", "Unauthorized")
    assert _raw(cluster, "/api/v1/nodes", token="wrong")[0] == 401
    assert _raw(cluster, "/api/v1/nodes", token=cluster.token)[0] == 200


def test_rbac_denial_answers_review_and_request_alike(cluster: DemoClusterThread, core: client.CoreV1Api) -> None:
    auth = client.AuthorizationV1Api(config.new_client_from_config(str(cluster.kubeconfig_path)))

    def allowed(verb: str, resource: str, group: str = "") -> bool:
        attrs = client.V1ResourceAttributes(verb=verb, resource=resource, group=group)
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs))
        return bool(auth.create_self_subject_access_review(review).status.allowed)

    assert allowed("patch", "clusterpolicies", "nvidia.com")
    assert not allowed("delete", "nodes")
    with pytest.raises(ApiException) as denied:
        core.delete_node("gpu-01")
    assert denied.value.status == 403
    assert 'cannot delete resource "nodes"' in json.loads(denied.value.body)["message"]


# -- nodes and pods ---------------------------------------------------------------------------------


def test_list_nodes_with_paging_and_selectors(core: client.CoreV1Api) -> None:
    first = core.list_node(limit=2)
    assert [n.metadata.name for n in first.items] == ["cpu", "gpu-01"]
    rest = core.list_node(limit=2, _continue=first.metadata._continue)
    assert [n.metadata.name for n in rest.items] == ["gpu-02"] and not rest.metadata._continue
    gpus = core.list_node(label_selector="nvidia.com/gpu.present=true").items
    assert sorted(n.metadata.name for n in gpus) == ["gpu-01", "gpu-02"]
    assert [n.metadata.name for n in core.list_node(label_selector="!nvidia.com/gpu.present").items] == ["cpu"]
    named = core.list_node(label_selector="kubernetes.io/hostname in (gpu-02,cpu),kubernetes.io/hostname notin (cpu)")
    assert [n.metadata.name for n in named.items] == ["gpu-02"]
    assert [n.metadata.name for n in core.list_node(field_selector="metadata.name=cpu").items] == ["cpu"]
    assert core.read_node("gpu-01").status.node_info.kernel_version == KERNEL


def test_list_pages_show_the_first_pages_snapshot(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    """A real server serves every page from the first page's revision: a change between pages does not show
    (a client that pages, then watches from the list's resourceVersion, is told of it by the watch)."""
    first = json.loads(core.list_node(limit=2, _preload_content=False).data)
    core.patch_node("gpu-02", {"metadata": {"labels": {"snapshot-test": "changed"}}}, _content_type=MERGE)
    try:
        rest = json.loads(core.list_node(limit=2, _continue=first["metadata"]["continue"], _preload_content=False).data)
        assert [n["metadata"]["name"] for n in rest["items"]] == ["gpu-02"]
        assert "snapshot-test" not in rest["items"][0]["metadata"]["labels"]
        assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        cluster.store.compact()  # as etcd compacts a revision away: the token expires
        with pytest.raises(ApiException) as expired:
            core.list_node(limit=2, _continue=first["metadata"]["continue"])
        assert expired.value.status == 410 and json.loads(expired.value.body)["reason"] == "Expired"
    finally:
        core.patch_node("gpu-02", {"metadata": {"labels": {"snapshot-test": None}}}, _content_type=MERGE)


def test_continue_pages_serve_the_first_pages_keys(core: client.CoreV1Api) -> None:
    """The later pages serve the first page's snapshot's keys, as a real server's do: not a key created since the
    first page, still a key deleted since."""
    ns = "paging-test"
    core.create_namespace({"metadata": {"name": ns}})
    made = ["a", "b", "c"]
    try:
        for name in made:
            core.create_namespaced_config_map(ns, {"metadata": {"name": name}})
        first = core.list_namespaced_config_map(ns, limit=1)
        assert [c.metadata.name for c in first.items] == ["a"]
        for name in ("b2", "d"):  # created after the snapshot: never served by this list
            core.create_namespaced_config_map(ns, {"metadata": {"name": name}})
            made.append(name)
        core.delete_namespaced_config_map("c", ns)  # deleted after it: still served
        made.remove("c")
        second = core.list_namespaced_config_map(ns, limit=1, _continue=first.metadata._continue)
        assert [c.metadata.name for c in second.items] == ["b"]
        last = core.list_namespaced_config_map(ns, limit=1, _continue=second.metadata._continue)
        assert [c.metadata.name for c in last.items] == ["c"] and not last.metadata._continue
    finally:
        for name in made:
            core.delete_namespaced_config_map(name, ns)
        core.delete_namespace(ns)


def test_patch_node_labels_by_merge_patch_only(core: client.CoreV1Api) -> None:
    core.patch_node("cpu", {"metadata": {"labels": {"team": "ml"}}}, _content_type=MERGE)  # as gpu-wizard labels
    assert core.read_node("cpu").metadata.labels["team"] == "ml"
    with pytest.raises(ApiException) as strategic:  # the client's default for a dict: no one the demo serves sends it
        core.patch_node("cpu", {"metadata": {"labels": {"team": "ai"}}})
    assert strategic.value.status == 415 and core.read_node("cpu").metadata.labels["team"] == "ml"
    with pytest.raises(ApiException) as json_patch:  # nor JSON patch (the client's default for a list)
        core.patch_node("cpu", [{"op": "remove", "path": "/metadata/labels/team"}])
    assert json_patch.value.status == 415 and core.read_node("cpu").metadata.labels["team"] == "ml"
    core.patch_node("cpu", {"metadata": {"labels": {"team": None}}}, _content_type=MERGE)
    assert "team" not in core.read_node("cpu").metadata.labels


def test_pods_by_field_selector_and_logs(core: client.CoreV1Api) -> None:
    pod = _driver_pod(core)
    node = pod.spec.node_name
    on_node = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node},status.phase=Running").items
    assert pod.metadata.name in {p.metadata.name for p in on_node}
    assert all(p.spec.node_name == node for p in on_node)
    status = pod.status.container_statuses[0]
    assert status.image_id.startswith("registry.example.com/mlops/nvidia-driver@sha256:")
    log = core.read_namespaced_pod_log(pod.metadata.name, "gpu-operator", container="nvidia-driver-ctr")
    assert isinstance(log, str) and log
    last = core.read_namespaced_pod_log(pod.metadata.name, "gpu-operator", container="nvidia-driver-ctr", tail_lines=1)
    assert last == log.splitlines(keepends=True)[-1]


def test_probe_pod_create_read_delete(core: client.CoreV1Api) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "gpu-wizard-probe-", "namespace": "default"},
        "spec": {"nodeName": "gpu-01", "containers": [{"name": "probe", "image": "busybox"}]},
    }
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.name.startswith("gpu-wizard-probe-") and created.metadata.uid
    assert core.read_namespaced_pod(created.metadata.name, "default").spec.node_name == "gpu-01"
    core.delete_namespaced_pod(created.metadata.name, "default")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod(created.metadata.name, "default")
    assert missing.value.status == 404 and json.loads(missing.value.body)["reason"] == "NotFound"


# -- watch --------------------------------------------------------------------------------------------


def test_watch_sees_a_label_change_and_honours_timeout(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    rv = core.list_node().metadata.resource_version
    labeller = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig_path)))
    timer = threading.Timer(
        0.2, lambda: labeller.patch_node("gpu-02", {"metadata": {"labels": {"watched": "yes"}}}, _content_type=MERGE)
    )
    timer.start()
    started = time.monotonic()
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1)
    ]
    timer.join()
    assert ("MODIFIED", "gpu-02") in events
    assert 0.9 <= time.monotonic() - started < 5


def test_watch_from_a_compacted_version_is_gone(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    cluster.call(cluster.store.compact)
    with pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(core.list_node, resource_version="1", timeout_seconds=1))
    assert gone.value.status == 410


def test_watch_expiry_fault_ends_the_stream_with_410(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    cluster.faults.watch_expiry_s = 0.3
    response = core.list_node(watch=True, timeout_seconds=5, _preload_content=False)
    lines = [json.loads(line) for line in response.data.decode().splitlines()]
    assert lines[-1]["type"] == "ERROR" and lines[-1]["object"]["code"] == 410


# -- exec -------------------------------------------------------------------------------------------


def test_exec_with_the_sync_stream_client(core: client.CoreV1Api) -> None:
    pod = _driver_pod(core).metadata.name
    out = stream(core.connect_get_namespaced_pod_exec, pod, "gpu-operator", command=["nvidia-smi"],
                 container="nvidia-driver-ctr", stderr=True, stdin=False, stdout=True, tty=False)  # fmt: skip
    assert "NVIDIA-SMI" in out
    ws = stream(core.connect_get_namespaced_pod_exec, pod, "gpu-operator", command=["no-such-command"],
                container="nvidia-driver-ctr", stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)  # fmt: skip
    ws.run_forever(timeout=5)
    assert ws.returncode == 127


def test_exec_refuses_unknown_pod_and_container(core: client.CoreV1Api) -> None:
    pod = _driver_pod(core).metadata.name
    # The websocket client reports a refused handshake as status 0 with the HTTP status and body in the reason.
    with pytest.raises(ApiException) as missing:
        stream(core.connect_get_namespaced_pod_exec, "nope", "gpu-operator", command=["true"], stdout=True)
    assert "Handshake status 404" in missing.value.reason and 'pods \\"nope\\" not found' in missing.value.reason
    with pytest.raises(ApiException) as bad:
        stream(
            core.connect_get_namespaced_pod_exec, pod, "gpu-operator", command=["true"], container="nope", stdout=True
        )
    assert "Handshake status 400" in bad.value.reason and "container nope is not valid" in bad.value.reason


async def test_aio_client_lists_watches_and_execs_over_v4(cluster: DemoClusterThread) -> None:
    from kubernetes.aio import client as aclient
    from kubernetes.aio import config as aconfig
    from kubernetes.aio import watch as awatch
    from kubernetes.aio.stream import WsApiClient

    cfg = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(cluster.kubeconfig_path), client_configuration=cfg)
    async with aclient.ApiClient(cfg) as api_client:
        core = aclient.CoreV1Api(api_client)
        page = await core.list_node(limit=1)
        assert len(page.items) == 1 and page.metadata._continue
        names = []
        async for event in awatch.Watch().stream(core.list_node, timeout_seconds=1):
            names.append(event["object"].metadata.name)
        assert sorted(names) == ["cpu", "gpu-01", "gpu-02"]
        pods = await core.list_namespaced_pod(
            "gpu-operator", label_selector="app.kubernetes.io/component=nvidia-driver"
        )
        pod = pods.items[0].metadata.name
    async with WsApiClient(configuration=cfg) as ws_client:
        out = await aclient.CoreV1Api(api_client=ws_client).connect_get_namespaced_pod_exec(
            pod, "gpu-operator", command=["nvidia-smi"], container="nvidia-driver-ctr", stderr=True, stdout=True
        )
    assert "NVIDIA-SMI" in out


async def test_demo_cluster_in_a_coroutine() -> None:
    import aiohttp

    from wizard.demo.cluster import DemoCluster

    async with DemoCluster(scenario(gpu_nodes=1), token="s3cret") as demo:
        await demo.settle()
        assert demo.kubeconfig_path.read_text().count('token: "s3cret"') == 1
        headers = {"Authorization": "Bearer s3cret"}
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{demo.url}/api/v1/nodes", headers=headers, ssl=demo.ssl_context()) as resp:
                names = [n["metadata"]["name"] for n in (await resp.json())["items"]]
            async with session.get(f"{demo.url}/api/v1/nodes", ssl=demo.ssl_context()) as resp:
                assert resp.status == 401
        assert names == ["cpu", "gpu"]
        assert demo.store.get("nodes", "gpu") is not None
    assert not demo.kubeconfig_path.exists()  # the temporary kubeconfig goes with the cluster


# -- custom resources -----------------------------------------------------------------------------------


def test_create_twice_is_already_exists(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("twice"))
    assert created["metadata"]["generation"] == 1 and created["metadata"]["uid"]
    with pytest.raises(ApiException) as again:
        custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("twice"))
    assert again.value.status == 409 and json.loads(again.value.body)["reason"] == "AlreadyExists"
    assert custom.get_cluster_custom_object(GROUP, V1, PLURAL, "twice")["spec"]["driver"]["version"] == "580.126.09.1"
    custom.delete_cluster_custom_object(GROUP, V1, PLURAL, "twice")


def test_server_side_apply_conflict_then_force(custom: client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("ssa"), field_manager="kubectl-client-side-apply")

    def apply(body: dict[str, Any], force: bool) -> dict[str, Any]:
        result: dict[str, Any] = custom.patch_cluster_custom_object(
            GROUP, V1, PLURAL, "ssa", body, field_manager="gpu-wizard", force=force,
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
        return result

    same = apply(policy("ssa"), force=False)  # same values: shared ownership, no conflict
    assert {m["manager"] for m in same["metadata"]["managedFields"]} == {"kubectl-client-side-apply", "gpu-wizard"}
    with pytest.raises(ApiException) as conflict:
        apply(policy("ssa", version="570.172.08.1"), force=False)
    status = json.loads(conflict.value.body)
    assert conflict.value.status == 409 and status["reason"] == "Conflict"
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using nvidia.com/v1: .spec.driver.version'
    )
    assert status["details"]["causes"][0]["field"] == ".spec.driver.version"
    forced = apply(policy("ssa", version="570.172.08.1"), force=True)
    assert forced["spec"]["driver"]["version"] == "570.172.08.1" and forced["metadata"]["generation"] == 2
    custom.delete_cluster_custom_object(GROUP, V1, PLURAL, "ssa")


def test_partial_apply_is_validated_after_merging(custom: client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("partial"))
    minimal = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "partial"},
               "spec": {"driver": {"version": "570.172.08.1"}}}  # fmt: skip
    merged = custom.patch_cluster_custom_object(
        GROUP, V1, PLURAL, "partial", minimal, field_manager="gpu-wizard", force=True,
        _content_type="application/apply-patch+yaml",
    )  # fmt: skip
    # as on a real API server, the merged object also gets the CRD's defaults for fields nobody set
    # (kernelModuleType: auto), before the required fields are checked
    assert merged["spec"]["driver"] == {
        **policy("partial")["spec"]["driver"],
        "version": "570.172.08.1",
        "kernelModuleType": "auto",
    }
    assert set(REQUIRED_SECTIONS) <= merged["spec"].keys()
    custom.delete_cluster_custom_object(GROUP, V1, PLURAL, "partial")
    with pytest.raises(ApiException) as incomplete:  # creating from the same minimal body lacks required keys
        custom.patch_cluster_custom_object(
            GROUP, V1, PLURAL, "partial", minimal, field_manager="gpu-wizard",
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
    assert (
        incomplete.value.status == 422
        and "spec.daemonsets: Required value" in json.loads(incomplete.value.body)["message"]
    )


def test_dry_run_validates_without_persisting(custom: client.CustomObjectsApi) -> None:
    preview = custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("preview"), dry_run="All")
    assert preview["metadata"]["name"] == "preview"
    with pytest.raises(ApiException) as missing:
        custom.get_cluster_custom_object(GROUP, V1, PLURAL, "preview")
    assert missing.value.status == 404


def test_strict_field_validation_names_the_field(custom: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as unknown:
        custom.create_cluster_custom_object(
            GROUP, V1, PLURAL, policy("strict", verison="x"), field_validation="Strict", dry_run="All"
        )
    assert unknown.value.status == 400
    assert 'unknown field "spec.driver.verison"' in json.loads(unknown.value.body)["message"]
    with pytest.raises(ApiException) as wrong_type:
        custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("strict", usePrecompiled="yes"), dry_run="All")
    status = json.loads(wrong_type.value.body)
    assert wrong_type.value.status == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "spec.driver.usePrecompiled"


def test_stale_resource_version_is_a_conflict(custom: client.CustomObjectsApi) -> None:
    current = custom.get_cluster_custom_object(GROUP, V1, PLURAL, "cluster-policy")
    stale = {**current, "metadata": {**current["metadata"], "resourceVersion": "2"}}
    with pytest.raises(ApiException) as conflict:
        custom.replace_cluster_custom_object(GROUP, V1, PLURAL, "cluster-policy", stale)
    assert conflict.value.status == 409 and "the object has been modified" in json.loads(conflict.value.body)["message"]


def test_status_is_a_subresource(custom: client.CustomObjectsApi, cluster: DemoClusterThread) -> None:
    custom.create_cluster_custom_object(GROUP, V1, PLURAL, policy("status-split"))
    ignored = custom.patch_cluster_custom_object(GROUP, V1, PLURAL, "status-split", {"status": {"state": "bogus"}})
    assert (ignored.get("status") or {}).get("state") != "bogus"
    changed = custom.patch_cluster_custom_object_status(
        GROUP, V1, PLURAL, "status-split", {"status": {"state": "ignored", "namespace": "gpu-operator"}}
    )
    assert changed["status"]["state"] == "ignored"
    custom.delete_cluster_custom_object(GROUP, V1, PLURAL, "status-split")


# -- faults and scale -----------------------------------------------------------------------------------


def test_429_fault_carries_retry_after(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    cluster.faults.error_code, cluster.faults.retry_after_s = 429, 3
    cluster.faults.only = ["/api/v1/nodes"]
    cluster.faults.error_rate = 1.0
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig_path), client_configuration=cfg)
    cfg.retries = 0  # urllib3 would otherwise honour Retry-After three times before giving up
    with pytest.raises(ApiException) as limited:
        client.CoreV1Api(client.ApiClient(cfg)).list_node()
    assert limited.value.status == 429 and limited.value.headers["Retry-After"] == "3"
    assert json.loads(limited.value.body)["reason"] == "TooManyRequests"
    assert core.list_namespace().items  # other paths are untouched


def test_dropped_connections_and_500s(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    cluster.faults.error_code, cluster.faults.error_rate = 500, 1.0
    with pytest.raises(ApiException) as failed:
        core.read_namespace("default")
    assert failed.value.status == 500 and json.loads(failed.value.body)["reason"] == "InternalError"
    cluster.faults.error_rate, cluster.faults.drop_rate = 0.0, 1.0
    code = None
    try:
        _raw(cluster, "/api/v1/namespaces/default", cluster.token)
    except (OSError, ValueError) as exc:  # the connection closes with no response at all
        code = type(exc).__name__
    assert code is not None


def test_exec_fail_nodes_fault(core: client.CoreV1Api, cluster: DemoClusterThread) -> None:
    pod = _driver_pod(core)
    cluster.faults.exec_fail_nodes = [pod.spec.node_name]
    with pytest.raises(ApiException) as failed:
        stream(core.connect_get_namespaced_pod_exec, pod.metadata.name, "gpu-operator", command=["nvidia-smi"],
               container="nvidia-driver-ctr", stderr=True, stdout=True)  # fmt: skip
    assert "Handshake status 500" in failed.value.reason and "error dialing backend" in failed.value.reason


def test_listing_the_large_scenario_in_pages_is_fast(demo_cluster: ClusterFactory) -> None:
    big = demo_cluster("large")
    core = client.CoreV1Api(config.new_client_from_config(str(big.kubeconfig_path)))
    started, names, token = time.monotonic(), [], None
    while True:
        page = json.loads(core.list_node(limit=500, _continue=token, _preload_content=False).data)
        assert len(page["items"]) <= 500
        names += [n["metadata"]["name"] for n in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    elapsed = time.monotonic() - started
    assert len(names) == len(set(names)) >= 5000
    assert elapsed < 5.0, f"listing {len(names)} nodes in pages of 500 took {elapsed:.2f}s"


def test_a_status_write_reuses_the_specs_json_and_the_bytes_stay_what_json_dumps_gives() -> None:
    store = Store()
    spec = {"containers": [{"name": "c", "command": ["sh", "-c", 'printf "é\\n%s" "$x"']}], "f": 1.5, "n": None}
    store.create("pods", {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec, "status": {"phase": "Pending"}})
    for phase in ("Running", "Succeeded"):
        stored = store.lookup("pods", "p", "ns")
        assert stored is not None
        data = store.encoded("pods", stored, ("v1", "Pod"))
        assert data == json.dumps({"apiVersion": "v1", "kind": "Pod", **stored}, separators=(",", ":")).encode()
        store.update("pods", {**stored, "status": {"phase": phase}}, adopt=True)
        kept = store._encoded["pods"][("ns", "p")]
        assert kept[:2] == ("", b"") and kept[2] is stored["spec"]  # the old JSON dropped, the spec's kept


def test_the_stores_sorted_keys_follow_creates_and_deletes_and_a_list_handed_out_never_changes() -> None:
    import random

    store = Store()
    for i in range(300):
        store.create("pods", {"metadata": {"name": f"p{i:04d}", "namespace": "ns"}})
    rng = random.Random(7)
    for step in range(600):
        name, namespace = f"p{rng.randrange(400):04d}", rng.choice(["ns", "a", "z"])
        if rng.random() < 0.5:
            if store.lookup("pods", name, namespace) is None:
                store.create("pods", {"metadata": {"name": name, "namespace": namespace}})
        else:
            store.delete("pods", name, namespace)
        if step % 5 == 0:
            handed_out = store.keys("pods")
            kept = list(handed_out)
            assert handed_out == sorted((p["metadata"]["namespace"], p["metadata"]["name"]) for p in store.list("pods"))
            store.create("pods", {"metadata": {"name": f"new{step}", "namespace": "ns"}})
            assert handed_out == kept  # the keys worked out again are a new list
