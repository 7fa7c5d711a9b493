"""``gpu-wizard apply --install-operator`` through the real ``helm`` (the lane's, built from helm.sh/helm/v4).

The wizard runs ``helm upgrade --install`` itself with the release's real chart (a local chart folder:
``--chart``, as an air-gapped site names it; ``../shared/operator-charts`` with the published
version/appVersion) and the values it computed, then follows the rollout. Helm's own checks run against
the server (CRDs Established before their objects, OpenAPI for field validation, its release Secret).
Against the demo's ``no-operator`` scenario: the demo's operator reconciles once the chart's Deployment
exists, and its first driver DaemonSets carry the planned image; ``drift`` reads the release Secret the real helm
wrote and is silent, the ClusterPolicy is Helm-owned, so the next ``apply`` goes through Helm, and a value
changed with ``helm upgrade --set`` is a line of ``drift``. Against the real control plane started without the operator
(``make real-cluster OPERATOR=none``): the real operator binary runs once the chart's Deployment exists,
as the chart's ServiceAccount (the chart's ClusterRole and Role, not system:masters), and the first
driver DaemonSets it creates carry the images the wizard predicted.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.chart_parity import _chart_dir
from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.demo import ClusterFactory
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import container, daemonsets, driver_daemonsets, wait_for
from tests.realcluster.kwokhost import HostFacts
from wizard.cli.main import main

RELEASE = "v26.7.0"
ANSWERS = (
    f"version: 1\noperator: {{version: {RELEASE}}}\nmode: precompiled\n"
    "driver: {version: 580.126.09.1, repository: registry.example.com/mlops}\n"
)
PLANNED = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"


@pytest.fixture
def helm_on_path(helm_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The lane's helm first on PATH, with its own HOME (helm keeps a cache and a config there)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binary)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return bin_dir / "helm"


def test_helm_installs_the_chart_with_the_plans_values_into_the_demo(
    demo_cluster: ClusterFactory,
    helm_on_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    demo = demo_cluster("no-operator")
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    chart = _chart_dir(RELEASE)
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code = main(
        [
            "apply", "--answers", str(answers), *kube, "--install-operator", "--chart", str(chart), "--yes",
            "--wait-timeout", "180",
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"chart {chart}\n" in out and "helm is not on PATH" not in err
    assert f"helm installed GPU Operator {RELEASE} (Helm release gpu-operator, namespace gpu-operator)" in err
    assert "rollout: ready" in err
    [policy] = demo.store.list("clusterpolicies")
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    assert demo.store.list("secrets", "gpu-operator"), "helm keeps its release in a Secret"
    drivers = [d for d in demo.store.list("daemonsets", "gpu-operator") if "driver" in d["metadata"]["name"]]
    images = {c["image"] for d in drivers for c in d["spec"]["template"]["spec"]["containers"]}
    assert drivers and images & {PLANNED} and not any(i.startswith("nvcr.io/nvidia/driver") for i in images)

    # drift reads the release record the real helm wrote: silent while it matches the plan
    code = main(["drift", "--answers", str(answers), *kube, "--no-registry", "-o", "json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert (code, doc["drift"], doc["skipped"]) == (0, [], []), out + err
    code = main(["drift", "--answers", str(answers), *kube, "--no-registry", "--report-junit", str(tmp_path / "d.xml")])
    out, err = capsys.readouterr()
    assert code == 0 and "Helm release gpu-operator/gpu-operator" in (tmp_path / "d.xml").read_text(), out + err

    # afterwards the install is Helm-owned: a later apply goes through the release's values. Without helm on PATH
    # it prints the helm upgrade (the demo runs no Job, so the chart's pre-upgrade hook would never finish: the
    # wizard running helm upgrade itself is tested on the real control plane, test_helm_owned_real.py)
    monkeypatch.setenv(
        "PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p != str(helm_on_path.parent))
    )
    code = main(["apply", "--answers", str(answers), *kube, "--yes", "--helm-values", str(tmp_path / "v.yaml")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in err
    assert "helm upgrade gpu-operator nvidia/gpu-operator" in err

    # a value changed through helm itself (`helm upgrade --reuse-values --set`) is a line of drift; without the
    # chart's pre-upgrade hook (a Job that updates the CRDs: the demo runs no such image to completion)
    proc = subprocess.run(
        [str(helm_on_path), "upgrade", "gpu-operator", str(chart), "--namespace", "gpu-operator", "--reuse-values",
         "--set", "driver.version=580.126.09.2", "--no-hooks", "--timeout", "120s",
         "--kubeconfig", str(demo.kubeconfig_path)],
        timeout=180, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    code = main(["drift", "--answers", str(answers), *kube, "--no-registry"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert (
        "✗ helm-values: Helm release gpu-operator/gpu-operator values driver.version: "
        "the plan says 580.126.09.1, the release has 580.126.09.2" in out.splitlines()
    ), out


MODES = {
    "precompiled": "mode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n",
    "upstream": "mode: upstream\ndriver:\n  version: '580.126.20'\n  repository: registry.example.com/nvidia\n",
    "preinstalled": "mode: preinstalled\n",
    "nvidiadriver": "mode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
    "  useNvidiaDriverCRD: true\n",
}


def _uninstall(cluster: RealCluster, helm: Path) -> None:
    """Back to no operator (the CRDs stay, as helm leaves them): the next mode installs over CRDs alone."""
    cluster.stop_operator()
    if not cluster.chart_deployment():
        return
    admin = ["--kubeconfig", str(cluster.kubeconfig("admin"))]
    subprocess.run(
        [str(helm), "uninstall", "gpu-operator", "-n", "gpu-operator", "--no-hooks", *admin], check=True, timeout=120
    )
    cluster.kubectl("delete", "nvidiadrivers.nvidia.com", "--all", "--wait=true", "--timeout=120s", check=False)
    wait_for("the operands to be collected", lambda: not driver_daemonsets(cluster), 180)
    wait_for("the chart's Deployment to go", lambda: cluster.chart_deployment() is None, 120)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_real_chart_through_helm_then_the_operator_as_its_service_account(
    bare_cluster: RealCluster, helm_on_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    """The wizard installs the real chart through the real helm into the real API server (first without the
    CRDs, then, after a helm uninstall, over the CRDs alone); the real operator, started once the chart's
    Deployment exists and running as the chart's ServiceAccount, creates driver DaemonSets whose first
    images are the ones the wizard named in its confirmation."""
    cluster = bare_cluster
    _uninstall(cluster, helm_on_path)
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\noperator:\n  version: {cluster.release}\n{MODES[mode]}"
        "toolkit:\n  installDir: /run/nvidia/toolkit-install\n"
    )
    # the hosts run their own driver in pre-installed mode (apply's host gate checks it), none otherwise
    smi = cluster.smi_output.read_text() if mode == "preinstalled" else ""
    cluster.set_stages({}, {}, HostFacts(smi=smi, toolkit_dir="/run/nvidia/toolkit-install"))
    admin = ["--kubeconfig", str(cluster.kubeconfig("admin"))]  # helm creates CRDs and ClusterRoles: an admin's job
    chart = str(_chart_dir(cluster.release))
    code, out, err = run(
        capsys, "apply", "--answers", str(answers), *admin, "--install-operator", "--chart", chart, "--yes",
        "--no-registry", "--no-wait",
    )  # fmt: skip
    assert code == 0, out + err
    assert f"helm installed GPU Operator {cluster.release}" in err, err
    named = out.split("  images:\n", 1)[1].split("  values:", 1)[0].split()
    predicted = {image for image in named if "/nvidia-driver:" in image or "/driver:" in image}
    assert len(predicted) == {"upstream": 1, "preinstalled": 0}.get(mode, 2), named
    [policy] = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    assert not driver_daemonsets(cluster), "no operator ran yet"

    cluster.start_operator_when_installed()
    if mode == "preinstalled":  # the host's driver: the operator reconciles the rest and never deploys one
        wait_for("the toolkit DaemonSet", lambda: "nvidia-container-toolkit-daemonset" in daemonsets(cluster), 180)
        assert not driver_daemonsets(cluster)
        return
    first = wait_for("the operator's first driver DaemonSets", lambda: driver_daemonsets(cluster), 180)
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in first.values()} <= predicted
    wait_for("every planned driver DaemonSet", lambda: len(driver_daemonsets(cluster)) == len(predicted), 120)
    found = driver_daemonsets(cluster)
    assert {container(ds, "nvidia-driver-ctr")["image"] for ds in found.values()} == predicted
    # it ran as the chart's ServiceAccount, and the chart's RBAC let it do all of that
    whoami = cluster.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", user="chart-operator")
    assert whoami.stdout == "system:serviceaccount:gpu-operator:gpu-operator", whoami.stdout
    log = (cluster.workdir / "gpu-operator.log").read_text(errors="replace")
    forbidden = [line for line in log.splitlines() if "forbidden" in line.lower()]
    assert "clusterpolicy" in log.lower() and not forbidden, forbidden[:3]
