"""Mode changes on the real GPU Operator leave nothing behind (each test runs once per built release).

Precompiled on Ubuntu 22.04, then the same nodes switched to pre-installed. The real operator deletes only
``nvidia-driver-daemonset`` when the driver is disabled (the state-disabled branch of ``DaemonSet()``), so the
per-kernel ``nvidia-driver-daemonset-<kernel>-ubuntu22.04`` would keep its driver pods with the ClusterPolicy
``ready``: gpu-wizard's apply names it, deletes it, keeps it in the backup, and a rollback puts it back. The
operator's own behaviour (the policy disabled by another tool) is recorded for the demo to copy
(``precompiled-then-driver-disabled``), and gpu-wizard neither calls that ready nor leaves it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    as_wizard,
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
from wizard.engine.leftovers import LEFT_WHEN_CRD_OFF
from wizard.engine.naming import precompiled_daemonset_name
from wizard.engine.releases import rules

BRANCH = "580"
LEFT = "left by the operator when the driver is disabled (it deletes only nvidia-driver-daemonset)"
DISABLE = {"spec": {"driver": {"enabled": False}}}


def _driver_pods(cluster: RealCluster) -> list[str]:
    pods = cluster.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnvidia-driver"
    )["items"]
    return sorted(p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp"))


def test_precompiled_to_preinstalled_leaves_nothing_behind(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-h100-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
        node("gpu-h100-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
    ]
    cluster.reset(nodes)
    tag = f"{BRANCH}-{UBUNTU_KERNEL}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=tag.encode())}
    smi = cluster.smi_output.read_text()
    # no host driver under the containerized driver (the host gate refuses one); from step 1 on, the hosts run
    # their own driver (their nvidia-smi answers the pre-installed check and verification)
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    precompiled = write(
        tmp_path / "precompiled.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: precompiled\n"
        f"driver:\n  version: '{BRANCH}'\n  repository: {host}/nvidia\n  image: driver\n  source: {host}/nvidia\n"
        "toolkit:\n  installDir: /usr/local/nvidia\n",
    )
    preinstalled = write(
        tmp_path / "preinstalled.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: preinstalled\n"
        "driver:\n  useNvidiaDriverCRD: false\ntoolkit:\n  installDir: /usr/local/nvidia\nhostPaths: {}\n",
    )
    backups = tmp_path / "b"
    registry = ["--insecure-registry", host]
    per_kernel = precompiled_daemonset_name(UBUNTU_KERNEL, "ubuntu22.04")

    def apply(answers: Path, *extra: str) -> tuple[int, str, str]:
        argv = ["apply", "--answers", str(answers), *as_wizard(cluster), "--yes", "--backup-dir", str(backups)]
        return run(capsys, *argv, *extra)

    def precompiled_runs() -> None:
        wait_for("the per-kernel DaemonSet", lambda: list(driver_daemonsets(cluster)) == [per_kernel], 120)
        wait_for("a driver pod per GPU node", lambda: len(_driver_pods(cluster)) == 2, 90)
        wait_settled(cluster)

    code, _, err = apply(precompiled, *registry)
    assert code == 0 and "rollout: ready" in err, err
    precompiled_runs()
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia", driver_dir=False, smi=smi))

    # 1. gpu-wizard switches to pre-installed: the leftover is listed, deleted with the apply, never ready over
    code, out, err = apply(preinstalled, "--no-registry")
    assert code == 0, err
    assert f"- delete DaemonSet {NAMESPACE}/{per_kernel}, {LEFT}\n" in out, out
    assert f"deleted DaemonSet {NAMESPACE}/{per_kernel}, {LEFT}" in err, err
    assert "rollout: ready: ClusterPolicy ready" in err, err
    assert not driver_daemonsets(cluster)
    wait_for("the driver pods to go", lambda: not _driver_pods(cluster), 90)
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(preinstalled), *as_wizard(cluster), "--no-registry")
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    code, out, err = apply(preinstalled, "--no-registry")  # the same plan again: nothing to send or delete
    assert code == 0 and "no changes" in err and "delete DaemonSet" not in out, out + err

    # 2. the rollback puts the policy back (the backup of step 1), and the operator the DaemonSet: re-created by the
    # rollback beside it, the v25.10.1 operator deleted it (no pod wanted yet) and made its own, and once in a run
    # the policy then stayed notReady past 180 s
    (backup,) = [p for p in sorted(backups.iterdir()) if per_kernel in p.read_text()]
    code, out, err = run(capsys, "rollback", "--backup", str(backup), *as_wizard(cluster))
    assert code == 0, err
    key = f"DaemonSet/{NAMESPACE}/{per_kernel}"
    back = (f"{key} is back: the operator made it again", f"{key} is there already")
    assert any(line in out + err for line in back) and f"re-created {key}" not in out + err, out + err
    precompiled_runs()

    # 3. the operator by itself: driver.enabled=false written by another tool leaves the per-kernel DaemonSet
    cluster.kubectl("patch", "clusterpolicy", "cluster-policy", "--type", "merge", "-p", json.dumps(DISABLE))
    wait_for("the operator to take the change", lambda: policy_state(cluster) == "ready", 120)
    wait_settled(cluster)
    assert list(driver_daemonsets(cluster)) == [per_kernel], "the real operator no longer leaves it: see leftovers.py"
    assert len(_driver_pods(cluster)) == 2
    record_or_check(cluster, "precompiled-then-driver-disabled", nodes, precompiled, host, after=DISABLE)
    code, out, _ = run(capsys, "verify", "--answers", str(preinstalled), *as_wizard(cluster), "--no-registry")
    assert code == 1 and f"a leftover DaemonSet {per_kernel} still runs driver pods" in out, out
    code, out, err = apply(preinstalled, "--no-registry")  # the policy holds the plan; the leftover goes
    assert code == 0 and f"- delete DaemonSet {NAMESPACE}/{per_kernel}, {LEFT}\n" in out, out + err
    assert not driver_daemonsets(cluster)
    wait_for("the driver pods to go", lambda: not _driver_pods(cluster), 90)


def test_nvidiadriver_crds_off_leaves_nothing_behind(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """useNvidiaDriverCRD on, then off: from v26.3 the NVIDIADriver controller stops and deletes nothing, so its
    DaemonSet is a leftover the apply deletes; v25.10.1's goes on reconciling it (nvidiaDriverCRDSwitch: false),
    so gpu-wizard deletes nothing there and the rollout fails naming the NVIDIADriver objects."""
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-l40s-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
        node("gpu-l40s-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    ]
    cluster.reset(nodes)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=b"crd")}
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on = upstream_answers(tmp_path / "on", cluster.release, host, extra="  useNvidiaDriverCRD: true\n")
    off = upstream_answers(tmp_path / "off", cluster.release, host)
    registry = ["--insecure-registry", host]

    def apply(answers: Path) -> tuple[int, str, str]:
        argv = ["apply", "--answers", str(answers), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b")]
        return run(capsys, *argv, *registry, "--wait-timeout", "120")

    code, _, err = apply(on)
    assert code == 0, err
    found = wait_for("the NVIDIADriver's DaemonSet", lambda: driver_daemonsets(cluster), 60)
    (nvd,) = found
    assert nvd.startswith("nvidia-gpu-driver-ubuntu22.04-"), found.keys()
    wait_settled(cluster)

    code, out, err = apply(off)
    if rules(cluster.release).nvidiaDriverCRDSwitch:
        assert code == 0, out + err
        assert f"- delete DaemonSet {NAMESPACE}/{nvd}, {LEFT_WHEN_CRD_OFF}\n" in out, out
        assert "rollout: ready" in err, err
        assert list(wait_for("only the ClusterPolicy's driver", lambda: _only_common(cluster), 90)) == [
            "nvidia-driver-daemonset"
        ]
        wait_for("a driver pod per GPU node", lambda: len(_driver_pods(cluster)) == 2, 90)
        wait_settled(cluster)
        code, out, err = run(capsys, "verify", "--answers", str(off), *as_wizard(cluster), *registry)
        assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    else:
        assert code == 1 and "delete DaemonSet" not in out, out + err
        assert "kubectl delete nvidiadrivers --all" in err, err
        assert nvd in driver_daemonsets(cluster)
        wait_for("the ClusterPolicy's driver beside it", lambda: len(driver_daemonsets(cluster)) == 2, 90)
        # two driver DaemonSets on the same nodes: v25.10.1's ClusterPolicy settles on notReady (seen for 180 s)
        wait_for("the ClusterPolicy notReady", lambda: policy_state(cluster) == "notReady", 120)
        time.sleep(5)
        assert policy_state(cluster) == "notReady"
    record_or_check(cluster, "nvidiadriver-then-crd-off", nodes, off, host, before=on)


def _only_common(cluster: RealCluster) -> list[str] | None:
    names = sorted(driver_daemonsets(cluster))
    return names if names == ["nvidia-driver-daemonset"] else None


def test_precompiled_and_upstream_switch_back_and_forth(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """precompiled -> upstream -> precompiled: the operator deletes the other flavour itself (by its
    nvidia.com/precompiled label), so gpu-wizard deletes nothing and its rollout waits for the old one to go."""
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-h100-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
        node("gpu-h100-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
    ]
    cluster.reset(nodes)
    digests = {}
    for tag in (f"{BRANCH}-{UBUNTU_KERNEL}-ubuntu22.04", f"{UPSTREAM_VERSION}-ubuntu22.04"):
        digests[f"{host}/nvidia/driver:{tag}"] = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    precompiled = write(
        tmp_path / "precompiled.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: precompiled\n"
        f"driver:\n  version: '{BRANCH}'\n  repository: {host}/nvidia\n  image: driver\n  source: {host}/nvidia\n"
        "toolkit:\n  installDir: /usr/local/nvidia\n",
    )
    (tmp_path / "up").mkdir()
    upstream = upstream_answers(tmp_path / "up", cluster.release, host)
    per_kernel = precompiled_daemonset_name(UBUNTU_KERNEL, "ubuntu22.04")
    for answers, wanted in (
        (precompiled, per_kernel),
        (upstream, "nvidia-driver-daemonset"),
        (precompiled, per_kernel),
    ):
        argv = ["apply", "--answers", str(answers), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b")]
        code, out, err = run(capsys, *argv, "--insecure-registry", host, "--wait-timeout", "120")
        assert code == 0 and "delete DaemonSet" not in out, out + err
        assert "rollout: ready" in err, err
        assert list(driver_daemonsets(cluster)) == [wanted]
        wait_for("a driver pod per GPU node", lambda: len(_driver_pods(cluster)) == 2, 90)
        wait_settled(cluster)


def test_upstream_to_preinstalled_needs_no_deletion(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """upstream -> pre-installed: the DaemonSet the operator deletes when the driver is disabled is the upstream
    one itself, so nothing is left and gpu-wizard deletes nothing."""
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-l40s-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
        node("gpu-l40s-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    ]
    cluster.reset(nodes)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=tag.encode())}
    smi = cluster.smi_output.read_text()
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))  # no host driver under the containerized one
    upstream = upstream_answers(tmp_path, cluster.release, host)
    preinstalled = write(
        tmp_path / "preinstalled.yaml",
        f"version: 1\noperator:\n  version: {cluster.release}\nmode: preinstalled\n"
        "driver:\n  useNvidiaDriverCRD: false\ntoolkit:\n  installDir: /usr/local/nvidia\nhostPaths: {}\n",
    )
    argv = [*as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b"), "--insecure-registry", host]
    code, _, err = run(capsys, "apply", "--answers", str(upstream), *argv)
    assert code == 0 and "rollout: ready" in err, err
    assert list(driver_daemonsets(cluster)) == ["nvidia-driver-daemonset"]
    wait_settled(cluster)
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia", driver_dir=False, smi=smi))  # the host's own
    code, out, err = run(capsys, "apply", "--answers", str(preinstalled), *argv, "--no-registry")
    assert code == 0 and "delete DaemonSet" not in out, out + err
    assert "rollout: ready: ClusterPolicy ready" in err, err
    assert not driver_daemonsets(cluster)
    wait_for("the driver pods to go", lambda: not _driver_pods(cluster), 90)


def _orphaned_driver_pods(cluster: RealCluster) -> list[str]:
    """Driver pods no DaemonSet owns any more (the ClusterPolicy's driver DaemonSet deleted with orphan propagation)."""
    pods = cluster.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnvidia-driver"
    )["items"]
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if not p["metadata"].get("deletionTimestamp") and not p["metadata"].get("ownerReferences")
    )


def test_nvidiadriver_crds_on_leaves_nothing_behind(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """useNvidiaDriverCRD off, then on (the other way round from the test above): the ClusterPolicy's controller
    deletes its own driver DaemonSet and the NVIDIADriver's rolls out, so gpu-wizard deletes nothing, and its
    rollout is ready with the NVIDIADriver's DaemonSet alone and no driver pod left without an owner."""
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        node("gpu-l40s-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
        node("gpu-l40s-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    ]
    cluster.reset(nodes)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=b"crd")}
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on = upstream_answers(tmp_path / "on", cluster.release, host, extra="  useNvidiaDriverCRD: true\n")
    off = upstream_answers(tmp_path / "off", cluster.release, host)
    registry = ["--insecure-registry", host]

    def apply(answers: Path, wait: str = "120") -> tuple[int, str, str]:
        argv = ["apply", "--answers", str(answers), *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b")]
        return run(capsys, *argv, *registry, "--wait-timeout", wait)

    code, _, err = apply(off)
    assert code == 0 and "rollout: ready" in err, err
    assert list(driver_daemonsets(cluster)) == ["nvidia-driver-daemonset"]
    wait_for("a driver pod per GPU node", lambda: len(_driver_pods(cluster)) == 2, 90)
    wait_settled(cluster)

    # v26.7.0 walks the nodes through its upgrade controller, one at a time (10 s and more per state here)
    code, out, err = apply(on, "300")
    assert code == 0, out + err
    assert "delete DaemonSet" not in out, out  # the operator deletes its own driver DaemonSet: nothing is left
    assert "rollout: ready" in err, err
    # ready was said with no driver DaemonSet but the NVIDIADriver's, and no driver pod left without an owner
    (nvd,) = driver_daemonsets(cluster)
    assert nvd.startswith("nvidia-gpu-driver-ubuntu22.04-"), nvd
    assert not _orphaned_driver_pods(cluster), _orphaned_driver_pods(cluster)
    wait_for("a driver pod per GPU node", lambda: len(_driver_pods(cluster)) == 2, 90)
    wait_settled(cluster)
    assert list(driver_daemonsets(cluster)) == [nvd] and not _orphaned_driver_pods(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(on), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err
    record_or_check(cluster, "crd-off-then-nvidiadriver", nodes, on, host, before=off)
