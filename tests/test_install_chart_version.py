"""``--chart`` naming a chart whose appVersion is not the release is refused before helm runs (issue 35, walk b).

The walk of ``no-operator`` with ``--chart`` the operator repository's chart folder (``appVersion: main-latest``, as
at every tag) installed it: the confirmation said ``nvcr.io/nvidia/gpu-operator:v26.7.0``, the cluster then pulled
``gpu-operator:main-latest`` for the operator and its validator, which nvcr.io does not hold (ImagePullBackOff after
the install). The chart's own Chart.yaml says so, so the install stops first and says which chart to use.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main
from wizard.cluster.applying.operator_install import chart_app_version

RELEASE = "v26.7.0"
ANSWERS = (
    f"version: 1\noperator: {{version: {RELEASE}}}\nmode: precompiled\n"
    "driver: {version: 580.126.09.1, repository: registry.example.com/mlops}\n"
)


def _chart(folder: Path, app_version: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "Chart.yaml").write_text(
        f"apiVersion: v2\nname: gpu-operator\nversion: v1.0.0-devel\nappVersion: {app_version!r}\n"
    )
    return folder


def test_a_chart_of_another_app_version_is_refused_before_helm_runs(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = demo_cluster("no-operator")
    chart = _chart(tmp_path / "gpu-operator", "main-latest")
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    values = tmp_path / "values.yaml"
    no_helm = tmp_path / "bin"
    no_helm.mkdir()
    monkeypatch.setenv("PATH", str(no_helm))  # without the check the wizard would print the command and wait
    code = main(
        [
            "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--install-operator",
            "--chart", str(chart), "--yes", "--helm-values", str(values), "--wait-timeout", "5", "--no-registry",
        ]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1, err
    said = " ".join(err.split())
    assert f"has appVersion main-latest, not {RELEASE}" in said, err
    assert "nvcr.io/nvidia/gpu-operator:main-latest" in said
    assert f"helm pull gpu-operator --repo https://helm.ngc.nvidia.com/nvidia --version {RELEASE}" in said
    assert not values.exists()  # nothing written
    assert not [d for d in demo.store.list("deployments") if "gpu-operator" in d["metadata"]["name"]]


def test_the_release_chart_folder_and_package_pass(tmp_path: Path) -> None:
    folder = _chart(tmp_path / "gpu-operator", RELEASE)
    assert chart_app_version(str(folder)) == RELEASE
    package = tmp_path / f"gpu-operator-{RELEASE}.tgz"
    with tarfile.open(package, "w:gz") as archive:
        archive.add(folder, arcname="gpu-operator")
    assert chart_app_version(str(package)) == RELEASE
    assert chart_app_version("oci://registry.example.com/charts/gpu-operator:v26.7.0") == ""
