"""``gpu-wizard drift`` on a Helm-installed cluster (issue 36 item 2): the Helm release that manages the live
ClusterPolicy, read from Helm's own release Secret on the demo cluster over real HTTPS, against the values the plan
computes; one line per value path that differs (and the chart version against the plan's release) in text, ``-o
json`` and the JUnit/CTRF reports. The lane reads a Secret the real helm wrote
(tests/realcluster/test_install_operator_real.py)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.reports import ctrf, junit_cases

ANSWERS = (
    "version: 1\noperator: {version: v26.3.3}\nmode: upstream\n"
    "driver: {version: '570.195.03', repository: nvcr.io/nvidia}\n"
)
SECRET = "sh.helm.release.v1.gpu-operator.v1"
RELEASE = "Helm release gpu-operator/gpu-operator"


def _record(secret: dict[str, Any]) -> dict[str, Any]:
    """Helm's release record in the Secret, decoded here on the test's own (base64 twice, gzip, JSON)."""
    return dict(json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"])))))


def _rewrite(store: Any, record: dict[str, Any]) -> None:
    secret = store.get("secrets", SECRET, "gpu-operator")
    inner = base64.b64encode(gzip.compress(json.dumps(record).encode())).decode()
    secret["data"]["release"] = base64.b64encode(inner.encode()).decode()
    store.update("secrets", secret)


@pytest.fixture
def helm_installed(demo_cluster: ClusterFactory, tmp_path: Path) -> tuple[Any, list[str], Path]:
    demo = demo_cluster("existing-install")
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    return demo, ["--kubeconfig", str(demo.kubeconfig_path), "--no-registry"], answers


def test_the_demo_keeps_helms_release_record(helm_installed: tuple[Any, list[str], Path]) -> None:
    demo, _, _ = helm_installed
    secret = demo.store.get("secrets", SECRET, "gpu-operator")
    assert secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["labels"] == {
        "name": "gpu-operator",
        "owner": "helm",
        "status": "deployed",
        "version": "1",
    }
    record = _record(secret)
    assert record["chart"]["metadata"]["version"] == "v26.3.3" and record["info"]["status"] == "deployed"
    assert record["config"]["driver"] == {"version": "570.195.03"}


def test_silent_when_the_release_matches_then_one_line_per_changed_value(
    helm_installed: tuple[Any, list[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo, kube, answers = helm_installed
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube)
    # the ClusterPolicy, three GPU nodes and the Helm release (the chart's defaults under the values it was given)
    assert (code, out) == (0, f"✓ no drift: 5 objects and GPU nodes match {answers}\n")

    record = _record(demo.store.get("secrets", SECRET, "gpu-operator"))
    record["config"]["driver"]["version"] = "580.126.20"  # `helm upgrade --reuse-values --set driver.version=…`
    record["config"]["toolkit"] = {"installDir": "/opt/nvidia"}
    record["chart"]["metadata"]["version"] = "v26.3.2"
    _rewrite(demo.store, record)
    junit, report = tmp_path / "drift.xml", tmp_path / "drift.json"
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube, "--report-junit", str(junit),
                       "--report-ctrf", str(report))  # fmt: skip
    assert code == 1
    assert out.splitlines() == [
        f"✗ helm-chart: {RELEASE}: chart version v26.3.2, the plan says v26.3.3",
        f"✗ helm-values: {RELEASE} values driver.version: the plan says 570.195.03, the release has 580.126.20",
        f"✗ helm-values: {RELEASE} values toolkit.installDir: the plan says /usr/local/nvidia, the release has "
        "/opt/nvidia",
        f"drift: 3 difference(s) from {answers}",
    ]
    case, props = junit_cases(junit)[f"helm-values {RELEASE} values.driver.version"]
    assert not case.is_passed and props["verdict"] == "fail" and "helm upgrade" in props["hint"]
    tests = {t["name"]: t for t in ctrf(report)["results"]["tests"]}
    assert tests[f"helm-chart {RELEASE} chart.version"]["status"] == "failed"

    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube, "-o", "json")
    doc = json.loads(out)
    assert code == doc["exitCode"] == 1
    assert [(d["check"], d["object"], d["field"], d["plan"], d["live"]) for d in doc["drift"]] == [
        ("helm-chart", RELEASE, "chart.version", "v26.3.3", "v26.3.2"),
        ("helm-values", RELEASE, "values.driver.version", "570.195.03", "580.126.20"),
        ("helm-values", RELEASE, "values.toolkit.installDir", "/usr/local/nvidia", "/opt/nvidia"),
    ]


def test_a_release_record_past_the_limit_is_not_read_and_says_so(
    helm_installed: tuple[Any, list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """A small Secret that would inflate to 40 MB: refused within the unpacked limit, a skipped line, not a match."""
    demo, kube, answers = helm_installed
    record = _record(demo.store.get("secrets", SECRET, "gpu-operator"))
    record["manifest"] = "a" * (40 * 1024 * 1024)
    _rewrite(demo.store, record)
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube)
    assert code == 0
    assert (
        f"- SKIPPED helm-values: {RELEASE}: values not compared (Secret gpu-operator/{SECRET}: its release record is "
        "larger than 32 MiB unpacked)" in out.splitlines()
    ), out
    assert out.splitlines()[-1] == f"✓ no drift: 4 objects and GPU nodes match {answers}"


def test_no_release_secret_is_said(
    helm_installed: tuple[Any, list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    demo, kube, answers = helm_installed
    demo.store.delete("secrets", SECRET, "gpu-operator")
    code, out, _ = run(capsys, "drift", "--answers", str(answers), *kube)
    assert code == 0 and f"- SKIPPED helm-values: {RELEASE}: values not compared (no deployed release Secret)" in out
