"""A release upgrade on the real operator: v25.10.1 installed by gpu-wizard, upgraded by it to v26.3.3.

The control plane starts without the operator (``OPERATOR=none``); ``apply --install-operator`` installs the
v25.10.1 chart through the lane's helm (upstream driver on Ubuntu 22.04) and the real v25.10.1 operator runs
it. Then ``gpu-wizard upgrade --driver NEW --operator v26.3.3 --chart <v26.3.3 chart>``: the ClusterPolicy is
Helm-owned, so the wizard runs ``helm upgrade`` of the release to the v26.3.3 chart with the plan's values and
follows the rollout. The lane swaps the operator binary as the chart's Deployment would roll: once the
Deployment names the v26.3.3 image, the v25.10.1 process stops and the v26.3.3 binary starts as the chart's
ServiceAccount (the v26.3.3 CRDs applied first, the work of the chart's pre-upgrade hook Job, which kwok does
not run). The driver DaemonSet must then carry the images the wizard predicted for v26.3.3, and no driver
DaemonSet the plan does not want may be left.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.chart_parity import _chart_dir
from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.build import Built
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.conftest import _FAILED, LOGS, releases
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    container,
    driver_daemonsets,
    healthy_host,
    node,
    upstream_answers,
    wait_for,
    wait_settled,
)

OLD, NEW = "v25.10.1", "v26.3.3"
NEW_DRIVER = "580.126.21"
NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-l40s-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    node("gpu-l40s-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
]

pytestmark = pytest.mark.skipif(
    not {OLD, NEW} <= set(releases()), reason=f"the lane has not built both {OLD} and {NEW}"
)


@pytest.fixture(scope="module")
def old_cluster(
    built: Built, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[RealCluster]:
    """``make real-cluster RELEASE=v25.10.1 OPERATOR=none`` on Ubuntu 22.04 nodes."""
    cluster = RealCluster(built, tmp_path_factory.mktemp("upgrade"), OLD)
    try:
        cluster.start(NODES, installed=False)
        yield cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / "release-upgrade")
        cluster.stop()


@pytest.fixture
def helm_on_path(helm_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binary)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return bin_dir / "helm"


def _operator_image(cluster: RealCluster) -> str:
    deployment = cluster.chart_deployment() or {}
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    return next((c["image"] for c in spec.get("containers") or [] if c["name"] == "gpu-operator"), "")


def _swap_when_rolled(cluster: RealCluster, failures: list[BaseException]) -> None:
    """What the Deployment's rollout does on a real cluster: the new release's operator replaces the old one."""
    try:
        wait_for(f"the chart's Deployment on {NEW}", lambda: _operator_image(cluster).endswith(f":{NEW}"), 600)
        cluster.stop_operator()
        cluster.release = NEW
        cluster.start_operator_when_installed()
    except BaseException as exc:  # handed to the test, which fails with it
        failures.append(exc)


def _images_said(err: str) -> set[str]:
    """The images the wizard said the cluster pulls (``images the cluster pulls (N):`` and its lines)."""
    block = err.split("images the cluster pulls (", 1)[1].split("\n", 1)[1]
    said = set()
    for line in block.splitlines():
        if not line.startswith("  "):
            break
        said.add(line.split()[0])
    return said


def test_the_wizard_upgrades_a_helm_install_from_v25_10_1_to_v26_3_3(
    old_cluster: RealCluster,
    helm_on_path: Path,
    oci_registry: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, host = old_cluster, oci_registry.host
    digests = {}
    for version in (UPSTREAM_VERSION, NEW_DRIVER):
        tag = f"{version}-ubuntu22.04"
        digests[f"{host}/nvidia/driver:{tag}"] = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = upstream_answers(tmp_path, OLD, host)
    admin = ["--kubeconfig", str(cluster.kubeconfig("admin"))]  # helm writes the chart's cluster-wide objects
    backups = ["--backup-dir", str(tmp_path / "b")]

    code, out, err = run(
        capsys, "apply", "--answers", str(plan), *admin, "--install-operator", "--chart", str(_chart_dir(OLD)),
        "--yes", "--no-registry", "--no-wait", *backups,
    )  # fmt: skip
    assert code == 0 and f"helm installed GPU Operator {OLD}" in err, out + err
    cluster.start_operator_when_installed()
    wait_for("the driver DaemonSet", lambda: list(driver_daemonsets(cluster)) == ["nvidia-driver-daemonset"], 180)
    wait_settled(cluster)

    # the chart's pre-upgrade hook Job (operator.upgradeCRD) applies the new release's CRDs before helm applies
    # the new templates; kwok runs no container (it completes the hook's pod at once), so the lane does the Job's
    # work first, as it would: `kubectl apply --server-side --force-conflicts` of the release's CRDs
    crds = sorted(cluster.built.operator_crds(NEW).glob("*.yaml"))
    cluster.kubectl("apply", "--server-side", "--force-conflicts", *[f"-f={c}" for c in crds])
    # the upgrade: helm upgrade to the new chart; the lane rolls the operator as the Deployment would
    failures: list[BaseException] = []
    swapper = threading.Thread(target=_swap_when_rolled, args=(cluster, failures), daemon=True)
    swapper.start()
    cluster.set_driver_version(NEW_DRIVER)
    code, out, err = run(
        capsys, "upgrade", "--driver", NEW_DRIVER, "--operator", NEW, "--answers", str(plan), *admin,
        "--chart", str(_chart_dir(NEW)), "--yes", "--no-registry", *backups, "--wait-timeout", "480",
    )  # fmt: skip
    swapper.join(timeout=60)
    assert not failures, failures
    assert code == 0, out + err
    assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in err, err
    assert "helm upgraded release gpu-operator (namespace gpu-operator)" in err, err
    assert "rollout: ready" in err, err
    assert cluster.release == NEW and _operator_image(cluster).endswith(f":{NEW}")
    predicted = _images_said(err)
    new_driver = f"{host}/nvidia/driver:{NEW_DRIVER}-ubuntu22.04"
    assert new_driver in predicted, predicted

    # the driver DaemonSets carry the new release's predicted images, and nothing the plan does not want is left
    found = driver_daemonsets(cluster)
    assert list(found) == ["nvidia-driver-daemonset"], list(found)
    (ds,) = found.values()
    assert container(ds, "nvidia-driver-ctr")["image"] == new_driver
    spec = ds["spec"]["template"]["spec"]
    images = {c["image"] for c in [*spec.get("initContainers", []), *spec["containers"]]}
    assert images <= predicted, images - predicted
    assert any("k8s-driver-manager" in i for i in images), images
    [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    assert policy["spec"]["driver"]["version"] == NEW_DRIVER
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    wait_settled(cluster)
    pods = cluster.get(
        f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dnvidia-driver"
    )["items"]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    assert len(live) == 2 and {c["image"] for p in live for c in p["spec"]["containers"]} >= {new_driver}
