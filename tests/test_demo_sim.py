"""The simulated operator and kubelet, driven through the real demo Store.

Each test seeds a bundled scenario, writes what a user (or the wizard) would write, ticks the
simulation until it is stable and checks what ``kubectl get`` would show.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.helpers.sim import (
    NS,
    SLE_DIGEST,
    SLE_KERNEL,
    SLE_POLICY,
    SLE_TAG,
    cluster_policy,
    condition,
    pods_of,
    settle,
    status_of,
    waiting_reason,
    world,
)
from wizard.demo.api.store import Store
from wizard.demo.rules.operator_rules import LABEL_DEPLOY_DRIVER, LABEL_UPGRADE_STATE, nvidiadriver_app_name
from wizard.demo.scenarios.scenario import load_scenario
from wizard.demo.sim.simulation import Simulation
from wizard.engine.nvsmi import parse_table


async def test_precompiled_sle_micro_driver_pods_run_the_mirrored_tuple() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)

    name = f"nvidia-driver-daemonset-{SLE_KERNEL}-sle-micro5.5"
    ds = store.get("daemonsets", name, NS)
    assert ds is not None
    assert ds["metadata"]["labels"]["app.kubernetes.io/component"] == "nvidia-driver"
    assert ds["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/kernel-version.full": SLE_KERNEL,
    }
    assert ds["metadata"]["ownerReferences"][0]["kind"] == "ClusterPolicy"
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] == 2

    driver = pods_of(store)
    assert sorted(driver) == ["gpu-h200-01", "gpu-h200-02"]
    for node, pod in driver.items():
        assert pod["status"]["phase"] == "Running"
        assert pod["spec"]["nodeName"] == node
        assert pod["metadata"]["ownerReferences"][0] == {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": name,
            "uid": ds["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
        assert pod["metadata"]["labels"]["controller-revision-hash"]
        ctr = status_of(pod, "nvidia-driver-ctr")
        assert ctr["image"] == f"registry.example.com/mlops/nvidia-driver:{SLE_TAG}"
        assert ctr["imageID"] == f"registry.example.com/mlops/nvidia-driver@{SLE_DIGEST}"
        assert (ctr["ready"], ctr["restartCount"], ctr["started"]) == (True, 0, True)
        assert "startedAt" in ctr["state"]["running"]
        manager = pod["status"]["initContainerStatuses"][0]
        assert manager["name"] == "k8s-driver-manager"
        assert manager["state"]["terminated"]["reason"] == "Completed"

    policy = store.get("clusterpolicies", "cluster-policy")
    assert policy["status"]["state"] == "ready"
    assert policy["status"]["namespace"] == NS
    assert condition(policy, "Ready")["reason"] == "Reconciled"
    node = store.get("nodes", "gpu-h200-01")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert node["metadata"]["labels"][LABEL_UPGRADE_STATE] == "upgrade-done"
    assert store.get("nodes", "cp-01")["metadata"]["labels"].get("nvidia.com/gpu.present") is None


async def test_status_passes_through_operand_not_ready() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    seen = set()
    for _ in range(60):
        changed = await sim.tick()
        policy = store.get("clusterpolicies", "cluster-policy")
        if policy.get("status"):
            error = condition(policy, "Error")
            seen.add((policy["status"]["state"], error["reason"], error.get("message", "")))
        if not changed:
            break
    assert (
        "notReady",
        "OperandNotReady",
        "ClusterPolicy is not ready, states not ready: "
        "[state-driver state-container-toolkit state-operator-validation state-device-plugin]",
    ) in seen
    assert ("ready", "Ready", "") in seen


async def test_toolkit_on_read_only_usr_local_crash_loops_on_sle_micro() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create(
        "clusterpolicies", cluster_policy(**{k: v for k, v in SLE_POLICY["spec"]["driver"].items() if k != "enabled"})
    )
    await settle(sim)
    toolkit = pods_of(store, app="nvidia-container-toolkit-daemonset")["gpu-h200-01"]
    assert waiting_reason(toolkit, "nvidia-container-toolkit-ctr") == "CrashLoopBackOff"
    log = sim.logs(NS, toolkit["metadata"]["name"], "nvidia-container-toolkit-ctr")
    assert "mkdir /usr/local/nvidia: read-only file system" in log
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "notReady"


async def test_missing_tuple_shows_image_pull_backoff_on_that_node_only() -> None:
    sim, store = world("missing-tuple")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    driver = pods_of(store)
    assert status_of(driver["gpu-a-01"], "nvidia-driver-ctr")["ready"] is True
    stuck = driver["gpu-b-01"]
    assert stuck["status"]["phase"] == "Pending"
    assert waiting_reason(stuck, "nvidia-driver-ctr") == "ImagePullBackOff"
    image = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5"
    message = status_of(stuck, "nvidia-driver-ctr")["state"]["waiting"]["message"]
    # the runtime's error alone, as the kubelet sets it (the "Failed to pull image" wording is the event's)
    assert message.startswith(f'Back-off pulling image "{image}": ErrImagePull: rpc error: code = NotFound'), message
    assert "Failed to pull image" not in message
    events = [
        e["message"] for e in store.list("events", NS) if e["involvedObject"]["name"] == stuck["metadata"]["name"]
    ]
    assert any(m.startswith(f'Failed to pull image "{image}": rpc error: code = NotFound') for m in events), events
    assert f'failed to resolve reference "{image}": {image}: not found' in message
    policy = store.get("clusterpolicies", "cluster-policy")
    assert condition(policy, "Error")["reason"] == "OperandNotReady"
    assert "state-driver" in condition(policy, "Error")["message"]


async def test_preinstalled_nodes_get_the_label_and_lose_their_driver_pod() -> None:
    sim, store = world("preinstalled")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    for name in ("gpu-l40s-01", "gpu-l40s-02"):
        assert store.get("nodes", name)["metadata"]["labels"][LABEL_DEPLOY_DRIVER] == "pre-installed"
    assert pods_of(store) == {}
    validator = pods_of(store, app="nvidia-operator-validator")["gpu-l40s-01"]
    log = sim.logs(NS, validator["metadata"]["name"], "driver-validation")
    assert "Attempting to validate a pre-installed driver on the host" in log
    assert "Detected a pre-installed driver on the host" in log
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"
    result = sim.exec(NS, validator["metadata"]["name"], "nvidia-operator-validator", ["chroot", "/host", "nvidia-smi"])
    report = parse_table(result.stdout.decode(), result.exit_code)
    assert (report.ok, report.driver_version, report.gpu_count) == (True, "580.126.20", 4)
    ready = sim.exec(
        NS, validator["metadata"]["name"], "nvidia-operator-validator", ["cat", "/run/nvidia/validations/driver-ready"]
    )
    assert "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\n" in ready.stdout.decode()


async def test_driver_disabled_keeps_the_deploy_label_true() -> None:
    sim, store = world("preinstalled")
    store.create("clusterpolicies", cluster_policy(enabled=False))
    await settle(sim)
    assert store.get("nodes", "gpu-l40s-01")["metadata"]["labels"][LABEL_DEPLOY_DRIVER] == "true"
    assert [d["metadata"]["name"] for d in store.list("daemonsets", NS) if "driver" in d["metadata"]["name"]] == []
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


async def test_mixed_os_cluster_policy_uses_the_first_nodes_os_tag_everywhere() -> None:
    sim, store = world("mixed-os")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    driver = pods_of(store)
    images = {node: status_of(pod, "nvidia-driver-ctr")["image"] for node, pod in driver.items()}
    assert set(images.values()) == {"nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"}
    assert status_of(driver["gpu-01"], "nvidia-driver-ctr")["ready"] is True
    assert waiting_reason(driver["gpu-03"], "nvidia-driver-ctr") == "CrashLoopBackOff"
    log = sim.logs(NS, driver["gpu-03"]["metadata"]["name"], "nvidia-driver-ctr")
    assert "built for ubuntu22.04 but the host runs rhel9" in log


async def test_mixed_os_precompiled_names_the_pool_right_but_tags_it_wrong() -> None:
    sim, store = world("mixed-os")
    store.create(
        "clusterpolicies",
        cluster_policy(usePrecompiled=True, repository="nvcr.io/nvidia", image="driver", version="580"),
    )
    await settle(sim)
    rhel_kernel = "5.14.0-427.13.1.el9_4.x86_64"
    # The name takes the node's NFD ID + full VERSION_ID (getKernelVersionsMap), not the release's OS tag.
    ds = store.get("daemonsets", "nvidia-driver-daemonset-5.14.0-427.13.1.el9.4-rhel9.4", NS)
    assert ds is not None
    assert ds["metadata"]["labels"]["app"] == "nvidia-driver-daemonset"
    image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"nvcr.io/nvidia/driver:580-{rhel_kernel}-ubuntu22.04"
    assert store.get("daemonsets", "nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04", NS) is not None


async def test_mixed_os_nvidiadriver_gets_one_pool_per_os() -> None:
    sim, store = world("mixed-os")
    store.create("clusterpolicies", cluster_policy(useNvidiaDriverCRD=True))
    nvd = store.create(
        "nvidiadrivers",
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "NVIDIADriver",
            "metadata": {"name": "default"},
            "spec": {
                "default": True,
                "driverType": "gpu",
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": "580.126.20",
            },
        },
    )
    reasons = set()
    while await sim.tick():
        status = store.get("nvidiadrivers", "default").get("status")
        if status:
            reasons.add((status["state"], condition(store.get("nvidiadrivers", "default"), "Error").get("message", "")))
    assert ("notReady", "Waiting for driver pod to be ready") in reasons
    uid = nvd["metadata"]["uid"]
    for tag in ("ubuntu22.04", "rhel9"):
        ds = store.get("daemonsets", nvidiadriver_app_name("gpu", tag, uid), NS)
        assert ds["metadata"]["labels"]["nvidia.com/node.os-version"] == tag
        assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == f"nvcr.io/nvidia/driver:580.126.20-{tag}"
    driver = pods_of(store)
    assert all(status_of(p, "nvidia-driver-ctr")["ready"] for p in driver.values())
    status = store.get("nvidiadrivers", "default")["status"]
    assert (status["state"], condition(store.get("nvidiadrivers", "default"), "Ready")["reason"]) == (
        "ready",
        "Reconciled",
    )
    assert store.get("daemonsets", "nvidia-driver-daemonset", NS) is None


async def test_nvidiadriver_is_disabled_without_the_clusterpolicy_switch() -> None:
    sim, store = world("ubuntu-upstream")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    store.create(
        "nvidiadrivers",
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "NVIDIADriver",
            "metadata": {"name": "gpu"},
            "spec": {"driverType": "gpu", "repository": "nvcr.io/nvidia", "image": "driver", "version": "580.126.20"},
        },
    )
    await settle(sim)
    nvd = store.get("nvidiadrivers", "gpu")
    assert nvd["status"]["state"] == "disabled"
    error = condition(nvd, "Error")
    assert (error["reason"], error["message"]) == ("Reconciled", "useNvidiaDriverCRD is not enabled in ClusterPolicy")


@pytest.mark.parametrize(
    ("driver", "message"),
    [
        (
            {"repository": "nvcr.io/nvidia", "image": "driver", "version": ""},
            "Failed to reconcile state-driver: invalid image specification: repository, image and version must all be set",
        ),
        (
            {
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": "580.126.20",
                "repoConfig": {"configMapName": "repos"},
            },
            "Failed to reconcile state-driver: ERROR: failed to get destination directory for custom repo config: "
            "repository configuration not supported for distribution sle-micro5.5",
        ),
    ],
)
async def test_invalid_clusterpolicy_is_reconcile_failed(driver: dict[str, Any], message: str) -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", cluster_policy(**driver))
    await settle(sim)
    policy = store.get("clusterpolicies", "cluster-policy")
    assert policy["status"]["state"] == "notReady"
    assert condition(policy, "Ready")["status"] == "False"
    error = condition(policy, "Error")
    assert (error["reason"], error["message"].split(" (")[0]) == ("ReconcileFailed", message)


async def test_precompiled_digest_in_a_clusterpolicy_renders_an_unpullable_reference() -> None:
    """Only the NVIDIADriver refuses a digest with precompiled; resolveDriverTag appends the kernel to it."""
    sim, store = world("sle-micro-precompiled")
    digest = "sha256:" + "a" * 64
    store.create(
        "clusterpolicies",
        cluster_policy(usePrecompiled=True, repository="nvcr.io/nvidia", image="driver", version=digest),
    )
    await settle(sim)
    ds = store.get("daemonsets", f"nvidia-driver-daemonset-{SLE_KERNEL}-sle-micro5.5", NS)
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == f"nvcr.io/nvidia/driver:{digest}-{SLE_KERNEL}"
    assert {waiting_reason(p, "nvidia-driver-ctr") for p in pods_of(store).values()} == {"InvalidImageName"}
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "notReady"


async def test_second_clusterpolicy_is_ignored() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    store.create("clusterpolicies", cluster_policy(name="another"))
    await settle(sim)
    assert store.get("clusterpolicies", "another")["status"] == {"state": "ignored", "namespace": NS}


async def test_upgrade_steps_each_node_through_the_upgrade_states() -> None:
    sim, store = world("existing-install")
    before = pods_of(store)
    assert sorted(before) == ["gpu-a100-01", "gpu-a100-02", "gpu-a100-03"]
    old = status_of(before["gpu-a100-01"], "nvidia-driver-ctr")
    assert old["image"] == "nvcr.io/nvidia/driver:570.195.03-ubuntu22.04" and old["ready"]
    assert store.get("nodes", "gpu-a100-01")["metadata"]["labels"][LABEL_UPGRADE_STATE] == "upgrade-done"

    policy = store.get("clusterpolicies", "cluster-policy")
    policy["spec"]["driver"]["version"] = "580.126.20"
    store.update("clusterpolicies", policy)
    history = {n["metadata"]["name"]: [n["metadata"]["labels"][LABEL_UPGRADE_STATE]] for n in store.list("nodes")[1:]}
    cordoned = set()
    for _ in range(200):
        changed = await sim.tick()
        for node in store.list("nodes"):
            state = node["metadata"]["labels"].get(LABEL_UPGRADE_STATE)
            if state:
                steps = history.setdefault(node["metadata"]["name"], [])
                if not steps or steps[-1] != state:
                    steps.append(state)
            if node["spec"].get("unschedulable"):
                cordoned.add(node["metadata"]["name"])
        if not changed:
            break
    assert history["gpu-a100-01"] == [
        "upgrade-done",
        "upgrade-required",
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "validation-required",
        "uncordon-required",
        "upgrade-done",
    ]
    assert cordoned == {"gpu-a100-01", "gpu-a100-02", "gpu-a100-03"}
    after = pods_of(store)
    for node, pod in after.items():
        assert pod["metadata"]["name"] != before[node]["metadata"]["name"]
        ctr = status_of(pod, "nvidia-driver-ctr")
        assert ctr["image"] == "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04" and ctr["ready"]
        assert ctr["imageID"].endswith("sha256:5dc7d887c68354d34b2c75213f027707da5c245f297d1f38465f2c10228ccdc9")
        assert pod["metadata"]["labels"]["pod-template-generation"] == "2"
        assert not store.get("nodes", node)["spec"].get("unschedulable")
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


async def test_airgapped_pulls_only_from_the_mirror() -> None:
    sim, store = world("airgapped")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    driver = pods_of(store)["gpu-h100-01"]
    message = status_of(driver, "nvidia-driver-ctr")["state"]["waiting"]["message"]
    assert "lookup nvcr.io" in message and "no such host" in message
    policy = store.get("clusterpolicies", "cluster-policy")
    policy["spec"]["driver"]["repository"] = "registry.airgap.local/nvidia"
    policy["spec"]["validator"]["repository"] = "registry.airgap.local/nvidia"
    store.update("clusterpolicies", policy)
    for pod in store.list("pods", NS):  # OnDelete: the stuck pods must go for the new image
        if pod["metadata"]["labels"].get("app.kubernetes.io/component") == "nvidia-driver":
            store.delete("pods", pod["metadata"]["name"], NS)
    await settle(sim)
    ctr = status_of(pods_of(store)["gpu-h100-01"], "nvidia-driver-ctr")
    assert (
        ctr["imageID"]
        == "registry.airgap.local/nvidia/driver@sha256:a5b89fc5c087221ea604a83337262bfa3f0ce7f22d404f9986a5e37406edc1a5"
    )


async def test_real_registry_digest_is_pulled_and_a_repush_does_not_change_running_pods(oci_registry: Any) -> None:
    repo = "mlops/nvidia-driver"
    first = oci_registry.push_image(repo, SLE_TAG, content=b"first build")
    scenario = load_scenario("sle-micro-precompiled")
    scenario.registry.url = oci_registry.url
    store = Store()
    sim = Simulation(scenario, store)
    sim.seed()
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    pods = pods_of(store)
    assert {status_of(p, "nvidia-driver-ctr")["imageID"] for p in pods.values()} == {
        f"registry.example.com/{repo}@{first}"
    }
    second = oci_registry.push_image(repo, SLE_TAG, content=b"second build")
    assert second != first
    await settle(sim)
    assert status_of(pods_of(store)["gpu-h200-01"], "nvidia-driver-ctr")["imageID"].endswith(first)

    oci_registry.delete_tag(repo, SLE_TAG)
    store.delete("nodes", "gpu-h200-02")
    await settle(sim)
    assert sorted(pods_of(store)) == ["gpu-h200-01"]
    policy = store.get("clusterpolicies", "cluster-policy")
    policy["spec"]["driver"]["version"] = "570.172.08.1"
    store.update("clusterpolicies", policy)
    await settle(sim)
    pod = pods_of(store)["gpu-h200-01"]
    assert waiting_reason(pod, "nvidia-driver-ctr") == "ImagePullBackOff"
    assert "code = NotFound" in status_of(pod, "nvidia-driver-ctr")["state"]["waiting"]["message"]
    assert store.get("nodes", "gpu-h200-01")["metadata"]["labels"][LABEL_UPGRADE_STATE] == "upgrade-failed"


def test_an_adopted_write_leaves_every_earlier_copy_and_event_as_it_was() -> None:
    """The kubelet hands its pods' statuses to the store without a deep copy (``adopt``): what a
    reader or a watcher got before must still not change under a later write, adopted or not."""
    store = Store()
    events: list[Any] = []
    store.subscribe(events.append)
    store.create("pods", {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}})
    first = store.lookup("pods", "p", "ns")
    assert first is not None
    read_copy = store.get("pods", "p", "ns")
    status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    adopted = store.update("pods", {**first, "status": status}, adopt=True)
    assert adopted is store.lookup("pods", "p", "ns")  # the stored object itself, read-only
    assert adopted["spec"] is first["spec"]  # shared: stored objects are never mutated
    assert adopted["metadata"] is not first["metadata"]  # the store fills in its own metadata
    assert first["metadata"]["resourceVersion"] != adopted["metadata"]["resourceVersion"]
    # A later write (a private copy, as the HTTP layer and the controllers make) changes nothing seen before.
    later = store.get("pods", "p", "ns")
    assert later is not None
    later["status"]["phase"] = "Running"
    later["status"]["conditions"].append({"type": "Ready", "status": "True"})
    later["spec"]["nodeName"] = "n2"
    store.update("pods", later)
    assert adopted["status"] == status and status == {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
    }
    assert first["spec"] == {"nodeName": "n1"} and "status" not in first
    assert read_copy is not None and read_copy["spec"] == {"nodeName": "n1"} and "status" not in read_copy
    added, modified, second = events
    assert added.obj is first and modified.obj is adopted and modified.old is first
    assert second.old is adopted and second.obj["status"]["phase"] == "Running"
    assert [e.obj["spec"]["nodeName"] for e in events] == ["n1", "n1", "n2"]
    # The adopted no-op write returns the stored object; nothing is emitted.
    current = store.lookup("pods", "p", "ns")
    assert current is not None
    assert store.update("pods", {**current}, adopt=True) is current and len(events) == 3
