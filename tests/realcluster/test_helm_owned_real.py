"""A Helm-owned install on the real operator: later applies go through ``helm upgrade`` and leave nothing behind.

The control plane starts without the operator and its CRDs (``OPERATOR=none``); ``gpu-wizard apply
--install-operator`` installs the real chart through the lane's helm with a precompiled plan on Ubuntu
22.04, and the real operator (run once the chart's Deployment exists, as its ServiceAccount) creates the
per-kernel driver DaemonSet. One node is then kept out of the driver rollout through Helm (the release upgraded,
then the node labelled ``nvidia.com/gpu.deploy.driver=false``, as a direct apply does), and the same nodes are
switched to pre-installed: the ClusterPolicy is
Helm-owned, so ``apply`` runs ``helm upgrade`` with the release's values itself. The real operator deletes
only ``nvidia-driver-daemonset`` when the driver is disabled; the per-kernel one is the wizard's to list, back
up and delete with the apply, and the rollout is never ready while it has driver pods.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.chart_parity import _chart_dir
from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.build import Built
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.conftest import _FAILED, LOGS, releases
from tests.realcluster.flows import UBUNTU_KERNEL, driver_daemonsets, healthy_host, node, wait_for, wait_settled, write
from wizard.cluster.applying.backup import read_backup
from wizard.engine.facts import LABEL_DEPLOY_DRIVER
from wizard.engine.naming import precompiled_daemonset_name

BRANCH = "580"
KEEP_OUT = "  image: driver\n  excludeNodes: [gpu-h100-1]\n"
LEFT = "left by the operator when the driver is disabled (it deletes only nvidia-driver-daemonset)"
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-h100-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
    node("gpu-h100-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-H100-80GB-HBM3"),
]


@pytest.fixture(scope="module", params=releases())
def day0_cluster(
    request: pytest.FixtureRequest, built: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealCluster]:
    """``make real-cluster OPERATOR=none`` on Ubuntu 22.04 nodes (one kernel): no CRDs, no operator."""
    release = request.param
    cluster = RealCluster(built, tmp_path_factory.mktemp(f"helm-{release}"), release)
    try:
        cluster.start(NODES, installed=False)
        yield cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / f"helm-owned-{release}")
        cluster.stop()


@pytest.fixture
def helm_on_path(helm_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The lane's helm first on PATH, with its own HOME (helm keeps a cache and a config there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binary)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return bin_dir / "helm"


def driver_pods(cluster: RealCluster, *, nodes: bool = False) -> list[str]:
    """The driver pods not being deleted (their nodes with ``nodes``)."""
    pods = cluster.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnvidia-driver"
    )["items"]
    key = "nodeName" if nodes else "name"
    return sorted(
        str((p["spec"] if nodes else p["metadata"]).get(key))
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
    )


def test_helm_owned_precompiled_to_preinstalled_leaves_nothing_behind(
    day0_cluster: RealCluster,
    helm_on_path: Path,
    oci_registry: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, host = day0_cluster, oci_registry.host
    tag = f"{BRANCH}-{UBUNTU_KERNEL}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=tag.encode())}
    smi = cluster.smi_output.read_text()
    # no host driver under the containerized one (the host gate refuses a precompiled plan over a loaded one)
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
    admin = ["--kubeconfig", str(cluster.kubeconfig("admin"))]  # helm writes the chart's cluster-wide objects
    chart = str(_chart_dir(cluster.release))
    backups = tmp_path / "b"
    per_kernel = precompiled_daemonset_name(UBUNTU_KERNEL, "ubuntu22.04")

    # day 0: the wizard installs the chart with the precompiled plan; the real operator then renders it
    code, out, err = run(
        capsys, "apply", "--answers", str(precompiled), *admin, "--install-operator", "--chart", chart, "--yes",
        "--no-registry", "--no-wait", "--backup-dir", str(backups),
    )  # fmt: skip
    assert code == 0 and f"helm installed GPU Operator {cluster.release}" in err, out + err
    cluster.start_operator_when_installed()
    wait_for("the per-kernel driver DaemonSet", lambda: list(driver_daemonsets(cluster)) == [per_kernel], 180)
    wait_for("a driver pod per GPU node", lambda: len(driver_pods(cluster)) == 2, 120)
    wait_settled(cluster)

    # one node kept out of the driver rollout, through Helm: the release is upgraded (its values unchanged), then the
    # node is labelled as after a direct apply, its value before kept in the backup; the DaemonSet leaves it
    # (its host runs its own driver, which the operands the operator keeps there use: without one they would wait
    # for a driver forever, a finding before apply)
    kept_out = write(tmp_path / "kept-out.yaml", precompiled.read_text().replace("  image: driver\n", KEEP_OUT))
    own = healthy_host("/usr/local/nvidia", smi=smi)
    cluster.set_stages(digests, {}, {"*": healthy_host("/usr/local/nvidia"), "gpu-h100-1": own})
    code, out, err = run(
        capsys, "apply", "--answers", str(kept_out), *admin, "--chart", chart, "--yes", "--no-registry", "--no-wait",
        "--backup-dir", str(tmp_path / "kept"), "--helm-values", str(tmp_path / "kept-values.yaml"),
    )  # fmt: skip
    assert code == 0, out + err
    assert f"Node/gpu-h100-1: label {LABEL_DEPLOY_DRIVER} true -> false (kept out of the driver rollout)" in err, err
    assert "helm upgraded release gpu-operator" in err and f"labelled {LABEL_DEPLOY_DRIVER}=false on gpu-h100-1" in err
    wait_for("the driver pod to leave gpu-h100-1", lambda: driver_pods(cluster, nodes=True) == ["gpu-h100-0"], 90)
    assert cluster.get("/api/v1/nodes/gpu-h100-1")["metadata"]["labels"][LABEL_DEPLOY_DRIVER] == "false"
    [kept_backup] = list((tmp_path / "kept").iterdir())
    assert read_backup(kept_backup).node_labels == {"gpu-h100-1": "true"}
    wait_settled(cluster)

    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia", driver_dir=False, smi=smi))  # now on the hosts
    # the same nodes to pre-installed: Helm owns the policy, so the change goes through helm upgrade, and the
    # per-kernel DaemonSet the operator leaves behind is listed, backed up and deleted with it
    code, out, err = run(
        capsys, "apply", "--answers", str(preinstalled), *admin, "--chart", chart, "--yes", "--no-registry",
        "--backup-dir", str(backups), "--helm-values", str(tmp_path / "values.yaml"),
    )  # fmt: skip
    assert code == 0, out + err
    assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in err, err
    assert f"- delete DaemonSet {NAMESPACE}/{per_kernel}, {LEFT}\n" in err, err
    assert "helm upgraded release gpu-operator (namespace gpu-operator)" in err, err
    assert f"deleted DaemonSet {NAMESPACE}/{per_kernel}, {LEFT}" in err, err
    assert "rollout: ready: ClusterPolicy ready" in err, err
    # ready was said only once no driver DaemonSet the plan does not want was left
    assert not driver_daemonsets(cluster), list(driver_daemonsets(cluster))
    wait_for("the driver pods to go", lambda: not driver_pods(cluster), 90)
    [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    assert policy["spec"]["driver"]["enabled"] is False
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    [backup] = [p for p in sorted(backups.iterdir()) if per_kernel in p.read_text()]
    assert "kind: ClusterPolicy" in backup.read_text()
    wait_settled(cluster)
    assert not driver_daemonsets(cluster) and not driver_pods(cluster), "the operator brought a driver back"
