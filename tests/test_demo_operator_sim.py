"""The simulated operator applying the operator's rules: NVIDIADriver pools, driver DaemonSet labels and mounts, and a real kubectl.

Companions of the peer table (``tests/test_demo_operator_rules.py``): here the whole simulation runs.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.helpers.sim import NS, SLE_KERNEL, SLE_POLICY, cluster_policy, pods_of, settle, world
from wizard.demo.rules import operator_rules as demo


def _rhel_scenario(release: str) -> dict[str, Any]:
    node = {"os_id": "rhel", "kernel": "5.14.0-427.13.1.el9_4.x86_64", "gpu_product": "NVIDIA-H200", "gpu_count": 8}
    return {
        "name": "rhel-minors",
        "operator": {"release": release},
        "nodes": [
            {**node, "name": "gpu-rhel94", "os_version": "9.4"},
            {**node, "name": "gpu-rhel95", "os_version": "9.5"},
        ],
    }


def _nvidiadriver(precompiled: bool = False) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": "default"},
        "spec": {
            "default": True,
            "driverType": "gpu",
            "usePrecompiled": precompiled,
            "repository": "nvcr.io/nvidia",
            "image": "driver",
            "version": "580.126.20",
            "labels": {"app": "mine", "team": "ml"},
        },
    }


async def test_nvidiadriver_pool_selects_on_the_major_so_every_rhel9_node_gets_a_pod() -> None:
    sim, store = world(_rhel_scenario("v26.7.0"))
    store.create("clusterpolicies", cluster_policy(useNvidiaDriverCRD=True))
    nvd = store.create("nvidiadrivers", _nvidiadriver())
    await settle(sim)
    name = demo.nvidiadriver_app_name("gpu", "rhel9", nvd["metadata"]["uid"])
    ds = store.get("daemonsets", name, NS)
    selector = ds["spec"]["template"]["spec"]["nodeSelector"]
    assert selector[demo.LABEL_OS_VERSION_MAJOR] == "9" and demo.LABEL_OS_VERSION not in selector
    assert ds["metadata"]["labels"]["app"] == name and ds["metadata"]["labels"]["team"] == "ml"
    assert "app.kubernetes.io/managed-by" not in ds["metadata"]["labels"]
    assert sorted(pods_of(store)) == ["gpu-rhel94", "gpu-rhel95"]


async def test_v26_3_pool_keeps_the_first_nodes_version_id_as_the_operator_did() -> None:
    """v26.3.3 names the pool rocky9 but selects the first node's full VERSION_ID: the other minor gets no pod."""
    scenario = _rhel_scenario("v26.3.3")
    for node in scenario["nodes"]:
        node["os_id"] = "rocky"
    sim, store = world(scenario)
    store.create("clusterpolicies", cluster_policy(useNvidiaDriverCRD=True))
    store.create("nvidiadrivers", _nvidiadriver())
    await settle(sim)
    assert sorted(pods_of(store)) == ["gpu-rhel94"]


async def test_clusterpolicy_precompiled_driver_keeps_the_common_app_label_and_mounts() -> None:
    sim, store = world("sle-micro-precompiled")
    policy = copy.deepcopy(SLE_POLICY)
    policy["spec"]["daemonsets"] = {"labels": {"app.kubernetes.io/managed-by": "gpu-operator", "app": "ignored"}}
    store.create("clusterpolicies", policy)
    await settle(sim)
    ds = store.get("daemonsets", f"nvidia-driver-daemonset-{SLE_KERNEL}-sle-micro5.5", NS)
    assert ds["metadata"]["labels"] == {
        "app": "nvidia-driver-daemonset",
        "nvidia.com/precompiled": "true",
        "app.kubernetes.io/component": "nvidia-driver",
    }
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    assert (
        pod_labels["app"] == "nvidia-driver-daemonset" and pod_labels["app.kubernetes.io/managed-by"] == "gpu-operator"
    )
    spec = ds["spec"]["template"]["spec"]
    driver_ctr = next(c for c in spec["containers"] if c["name"] == "nvidia-driver-ctr")
    mounted = {m["name"] for m in driver_ctr["volumeMounts"]}
    assert "host-root" not in mounted  # only k8s-driver-manager sees the host's /
    assert "lib-modules" not in mounted  # sle-micro (SLE Micro 5.x) is not sles / sl-micro
    assert all(pod["metadata"]["labels"]["app"] == "nvidia-driver-daemonset" for pod in pods_of(store).values())


def test_kubectl_lists_precompiled_driver_pods_by_the_documented_app_label(
    demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path
) -> None:
    cluster = demo_cluster("sle-micro-precompiled")
    path = tmp_path / "cp.json"
    path.write_text(json.dumps(SLE_POLICY))
    done = kubectl(cluster, "apply", "--server-side", "-f", str(path))
    assert done.returncode == 0, done.stderr
    cluster.settle()
    listed: subprocess.CompletedProcess[str] = kubectl(
        cluster,
        "get", "pods", "-n", NS, "-l", "app=nvidia-driver-daemonset",
        "-o", "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{\"\\n\"}{end}",
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert sorted(node for _, node in rows) == ["gpu-h200-01", "gpu-h200-02"]
    assert all(name.startswith(f"nvidia-driver-daemonset-{SLE_KERNEL}-sle-micro5.5-") for name, _ in rows)
