"""``gpu-wizard apply --install-operator`` through the real ``helm`` (the lane's, built from helm.sh/helm/v4).

The wizard runs ``helm upgrade --install`` itself with the release's real chart (a local chart folder:
``--chart``, as an air-gapped site names it; ``../shared/operator-charts`` with the published
version/appVersion) and the values it computed, then follows the rollout. Helm's own checks run against
the server (CRDs Established before their objects, OpenAPI for field validation, its release Secret).
Against the demo's ``no-operator`` scenario: the demo's operator reconciles once the chart's Deployment
exists, and its first driver DaemonSets carry the planned image; the ClusterPolicy is Helm-owned, so the
next ``apply`` goes through Helm.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures_demo import ClusterFactory
from tests.helpers.chart_parity import _chart_dir
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
    demo_cluster: ClusterFactory, helm_on_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
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

    # afterwards the install is Helm-owned: a later apply goes through the release's values
    code = main(["apply", "--answers", str(answers), *kube, "--yes", "--helm-values", str(tmp_path / "v.yaml")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in err
    assert "helm upgrade gpu-operator nvidia/gpu-operator" in err
