"""gpu-wizard against a real kube-apiserver and the real GPU Operator (each test runs once per built release).

The wizard works as the restricted `wizard` user (exactly the permissions its preflight documents);
the real operator renders its DaemonSets from what the wizard applied, and they must be the ones the
wizard predicted (names, images); kwok's fake kubelets run the pods and report the digests the test's
real registry gave; the wizard's verification must pass, and fail on a node whose kubelet reports
another digest. Each test starts from a clean cluster on its own nodes (`RealCluster.reset`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.flows import (
    SLE_KERNELS,
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    as_wizard,
    container,
    daemonsets,
    driver_daemonsets,
    healthy_host,
    node,
    policy_state,
    record_or_check,
    upstream_answers,
    wait_for,
    wait_settled,
    write,
)
from wizard.engine.naming import Release, os_tag, precompiled_daemonset_name, repo_config_dirs
from wizard.engine.operator_names import DRIVER_SELECTOR

PRECOMPILED_VERSION = "580.126.09.1"
STALE = "sha256:" + "0" * 64


def test_the_server_reports_a_real_version(real_cluster: RealCluster) -> None:
    assert real_cluster.get("/version")["gitVersion"] == "v1.36.3"


def test_precompiled_on_two_kernels(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    k1, k2 = SLE_KERNELS
    nodes = [
        node("cp-0", "sle-micro", "5.5", k1, gpu=False),
        node("gpu-a-0", "sle-micro", "5.5", k1),
        node("gpu-a-1", "sle-micro", "5.5", k1),
        node("gpu-b-0", "sle-micro", "5.5", k2),
    ]
    cluster.reset(nodes)
    digests = {}
    for kernel in SLE_KERNELS:
        tag = f"{PRECOMPILED_VERSION}-{kernel}-sle-micro5.5"
        digests[f"{host}/mlops/nvidia-driver:{tag}"] = oci_registry.push_image(
            "mlops/nvidia-driver", tag, content=kernel.encode()
        )
    cluster.set_stages(digests, {}, healthy_host("/run/nvidia/toolkit-install"))
    cluster.set_driver_version(PRECOMPILED_VERSION)
    plan = write(
        tmp_path / "answers.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: precompiled\n"
        f"driver:\n  version: '{PRECOMPILED_VERSION}'\n  repository: {host}/mlops\n  source: {host}/mlops\n"
        "toolkit:\n  installDir: /run/nvidia/toolkit-install\n",
    )
    apply = ["apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b")]
    registry = ["--insecure-registry", host]

    code, out, err = run(capsys, *apply, *registry)
    assert code == 0, err
    assert "rollout: ready: ClusterPolicy ready" in err, err
    assert_hosts_checked(err, 3)

    found = driver_daemonsets(cluster)
    assert sorted(found) == sorted(precompiled_daemonset_name(k, "sle-micro5.5") for k in SLE_KERNELS)
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == set(digests)
    toolkit = container(daemonsets(cluster)["nvidia-container-toolkit-daemonset"], "nvidia-container-toolkit-ctr")
    assert {"name": "ROOT", "value": "/run/nvidia/toolkit-install"} in toolkit["env"]
    assert policy_state(cluster) == "ready"

    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 0, out + err
    assert out.endswith("✓ summary: all 3 GPU nodes verified\n"), out
    record_or_check(cluster, "precompiled-two-kernels", nodes, plan, host)

    code, out, err = run(capsys, *apply, *registry)  # the same plan again: nothing to send
    assert code == 0 and "no changes" in err, err

    # gpu-a-1's kubelet now reports another digest than the registry's: verification names that node
    cluster.set_stages(digests, {"gpu-a-1": STALE}, healthy_host("/run/nvidia/toolkit-install"))
    cluster.kubectl(
        "delete",
        "pod",
        "-n",
        NAMESPACE,
        "-l",
        DRIVER_SELECTOR,
        "--field-selector=spec.nodeName=gpu-a-1",
        "--wait=true",
    )
    wait_for("gpu-a-1's driver pod to run again", lambda: _driver_pod_running(cluster, "gpu-a-1"), 90)
    code, out, _ = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 1, out
    assert f"✗ image-digest gpu-a-1: the pod runs {STALE}" in out, out
    assert "✓ image-digest gpu-a-0" in out and "✓ image-digest gpu-b-0" in out


def test_upstream_on_ubuntu(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-l40s-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
        node("gpu-l40s-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    ]
    cluster.reset(nodes)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    image = f"{host}/nvidia/driver:{tag}"
    cluster.set_stages(
        {image: oci_registry.push_image("nvidia/driver", tag, content=b"upstream")},
        {},
        healthy_host("/usr/local/nvidia"),
    )
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = upstream_answers(tmp_path, cluster.release, host)
    registry = ["--insecure-registry", host]
    code, _, err = run(
        capsys, "apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path), *registry
    )
    assert code == 0, err
    assert_hosts_checked(err, 2)
    found = driver_daemonsets(cluster)
    assert list(found) == ["nvidia-driver-daemonset"]
    assert container(found["nvidia-driver-daemonset"], "nvidia-driver-ctr")["image"] == image
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    record_or_check(cluster, "upstream", nodes, plan, host)


def assert_hosts_checked(err: str, gpu_nodes: int) -> None:
    """The apply's host gate checked every GPU node's host (kwok answers each step of the probe): none
    "could not be checked"."""
    assert f"✓ hosts: no blocking finding on all {gpu_nodes} GPU nodes" in err, err
    assert "could not be checked" not in err, err


def _driver_pod_running(cluster: RealCluster, node_name: str) -> bool:
    pods = cluster.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnvidia-driver"
        f"&fieldSelector=spec.nodeName%3D{node_name}"
    )["items"]
    return any(p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp") for p in pods)


def test_preinstalled_host_driver(
    real_cluster: RealCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = real_cluster
    nodes = [
        node("cp-0", "ubuntu", "22.04", "5.15.0-171-generic", gpu=False),
        node("gpu-a100-0", "ubuntu", "22.04", "5.15.0-171-generic", product="NVIDIA-A100-SXM4-80GB"),
        node("gpu-a100-1", "ubuntu", "22.04", "5.15.0-171-generic", product="NVIDIA-A100-SXM4-80GB"),
    ]
    cluster.reset(nodes)
    cluster.set_stages({}, {}, healthy_host("/usr/local/nvidia", driver_dir=False, smi=cluster.smi_output.read_text()))
    plan = write(
        tmp_path / "answers.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: preinstalled\n"
        "driver:\n  useNvidiaDriverCRD: false\ntoolkit:\n  installDir: /usr/local/nvidia\nhostPaths: {}\n",
    )
    code, _, err = run(
        capsys, "apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path)
    )
    assert code == 0, err
    assert_hosts_checked(err, 2)
    wait_for("ClusterPolicy ready", lambda: policy_state(cluster) == "ready", 120)
    assert not driver_daemonsets(cluster)  # driver.enabled=false: the operator renders no driver
    assert "nvidia-container-toolkit-daemonset" in daemonsets(cluster)
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), "--no-registry")
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    record_or_check(cluster, "preinstalled", nodes, plan, "")


def test_nvidiadriver_crs_on_mixed_os(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    rhel_kernel = "5.14.0-427.13.1.el9_4.x86_64"
    nodes = [
        node("cp-01", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-01", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-A100-SXM4-80GB"),
        node("gpu-03", "rhel", "9.4", rhel_kernel, product="NVIDIA-A100-SXM4-80GB"),
    ]
    cluster.reset(nodes)
    digests = {}
    for os_id, version_id in (("ubuntu", "22.04"), ("rhel", "9.4")):
        tag = f"{UPSTREAM_VERSION}-{os_tag(os_id, version_id, cluster.release)}"
        digests[f"{host}/nvidia/driver:{tag}"] = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = write(
        tmp_path / "answers.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: upstream\n"
        f"driver:\n  version: '{UPSTREAM_VERSION}'\n  repository: {host}/nvidia\n  image: driver\n  source: {host}/nvidia\n"
        "  useNvidiaDriverCRD: true\ntoolkit:\n  installDir: /usr/local/nvidia\n",
    )
    registry = ["--insecure-registry", host]
    code, _, err = run(
        capsys, "apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path), *registry
    )
    assert code == 0, err
    assert_hosts_checked(err, 2)
    # one pool per OS; the operator may still be creating the second pool's DaemonSet when the first is ready
    found = wait_for(
        "a driver DaemonSet per OS",
        lambda: len(driver_daemonsets(cluster)) == len(digests) and driver_daemonsets(cluster),
        60,
    )
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == set(digests), found.keys()
    assert all(name.startswith("nvidia-gpu-driver-") for name in found)
    drivers = cluster.get("/apis/nvidia.com/v1alpha1/nvidiadrivers")["items"]
    wait_for(
        "every NVIDIADriver ready",
        lambda: all(
            (d.get("status") or {}).get("state") == "ready"
            for d in cluster.get("/apis/nvidia.com/v1alpha1/nvidiadrivers")["items"]
        ),
        120,
    )
    assert drivers
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    record_or_check(cluster, "nvidiadriver-mixed-os", nodes, plan, host)


def test_airgapped_upstream_mounts_the_repo_config(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    # two GPU nodes: one node's host checks go through an exec of the wizard's own script, which the lane
    # never runs on this machine (kwok answers execs locally); two or more use the probe DaemonSet
    gpu_nodes = [node(f"gpu-l40s-{i}", "ubuntu", "22.04", UBUNTU_KERNEL) for i in range(2)]
    nodes = [node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False), *gpu_nodes]
    cluster.reset(nodes)
    cluster.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "repo-config", "namespace": NAMESPACE},
            "data": {"local.list": "deb [trusted=yes] http://mirror.internal/ubuntu jammy main\n"},
        }
    )
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    image = f"{host}/nvidia/driver:{tag}"
    cluster.set_stages(
        {image: oci_registry.push_image("nvidia/driver", tag, content=b"airgapped")},
        {},
        healthy_host("/usr/local/nvidia"),
    )
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = upstream_answers(
        tmp_path, cluster.release, host, extra="  airgapped: true\n  repoConfig:\n    configMapName: repo-config\n"
    )
    registry = ["--insecure-registry", host]
    code, _, err = run(
        capsys, "apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path), *registry
    )
    assert_hosts_checked(err, 2)
    if Release.parse(cluster.release) < Release(26, 3):
        # v25.10's ClusterPolicy picks the repository folder from the operator pod's own OS: the wizard
        # warns before applying, and the real operator does fail as the warning says
        assert "warning repoconfig-operator-os" in err, err
        assert code == 1 and "failed to get destination directory for custom repo config" in err, err
        return
    assert code == 0, err
    ds = driver_daemonsets(cluster)["nvidia-driver-daemonset"]
    mounts = {m["name"]: m["mountPath"] for m in container(ds, "nvidia-driver-ctr").get("volumeMounts") or []}
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    (repo,) = [name for name, v in volumes.items() if (v.get("configMap") or {}).get("name") == "repo-config"]
    # one file per ConfigMap key, mounted by subPath into the OS's repository folder
    assert mounts[repo] == f"{repo_config_dirs(cluster.release)['ubuntu']}/local.list", mounts
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 0 and "✓ summary:" in out.splitlines()[-1], out + err
    record_or_check(cluster, "airgapped-repoconfig", nodes, plan, host)


def test_upgrade_follows_the_real_upgrade_controller_then_rollback(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    # The operator reports in the policy's status all through the upgrade: the wizard's guarded write must
    # follow those reports (it was refused with 409 before; docs/real-cluster.md, tests/test_apply_guard.py).
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        *[node(f"gpu-l40s-{i}", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S") for i in range(2)],
    ]
    cluster.reset(nodes)
    new_version = "580.126.21"
    digests = {}
    for version in (UPSTREAM_VERSION, new_version):
        tag = f"{version}-ubuntu22.04"
        digests[f"{host}/nvidia/driver:{tag}"] = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = upstream_answers(tmp_path, cluster.release, host)
    registry = ["--insecure-registry", host]
    backups = tmp_path / "backups"
    code, _, err = run(
        capsys, "apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--backup-dir", str(backups), *registry
    )
    assert code == 0, err
    assert_hosts_checked(err, 2)

    # the upgrade: the real upgrade controller drains and restarts each node's driver pod
    cluster.set_driver_version(new_version)
    code, out, err = run(
        capsys,
        "upgrade",
        "--driver",
        new_version,
        "--answers",
        str(plan),
        *as_wizard(cluster),
        "--yes",
        "--backup-dir",
        str(backups),
        *registry,
        "--wait-timeout",
        "300",
    )
    assert code == 0, out + err
    (ds,) = driver_daemonsets(cluster).values()
    assert container(ds, "nvidia-driver-ctr")["image"] == f"{host}/nvidia/driver:{new_version}-ubuntu22.04"
    new_plan = write(tmp_path / "new.yaml", plan.read_text().replace(UPSTREAM_VERSION, new_version))
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(new_plan), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err

    # rollback restores the policy the upgrade replaced
    newest = max(backups.iterdir(), key=lambda p: p.stat().st_mtime)
    code, out, err = run(capsys, "rollback", "--backup", str(newest), *as_wizard(cluster))
    assert code == 0, out + err
    wait_for(
        "the driver DaemonSet back on the old image",
        lambda: container(next(iter(driver_daemonsets(cluster).values())), "nvidia-driver-ctr")["image"].endswith(
            f"{UPSTREAM_VERSION}-ubuntu22.04"
        ),
        60,
    )

    code, out, err = run(capsys, "cleanup", *as_wizard(cluster))  # every probe the wizard made is gone already
    assert code == 0, out + err
