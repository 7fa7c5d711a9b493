"""``--report-junit`` and ``--report-ctrf`` (issue 36, the CI gate): the files ``verify``, ``doctor`` and ``drift``
write are read the way CI systems read them. The CTRF file is validated against CTRF's own JSON schema (pinned in
tests/schemas, its source noted there), the JUnit file is read by junitparser (a JUnit library from PyPI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.reports import ctrf, junit_cases
from wizard.cli.main import main


def answers(path: Path) -> Path:
    path.write_text(
        "version: 1\nmode: precompiled\n"
        "driver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
        "  source: docker.io/alaudadockerhub\n"
    )
    return path


def test_verify_writes_junit_and_ctrf_with_one_case_per_check(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("missing-tuple")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    plan = answers(tmp_path / "answers.yaml")
    apply = ["apply", "--answers", str(plan), *kube, "--yes", "--backup-dir", str(tmp_path), "--allow-missing-images"]
    assert main(apply) == 1  # gpu-b-01's image is missing: its driver pod never runs
    capsys.readouterr()
    junit, report = tmp_path / "out" / "verify.xml", tmp_path / "out" / "verify.ctrf.json"
    verify = ["verify", "--answers", str(plan), *kube, "--no-registry", "--no-diagnosis"]
    code = main([*verify, "--report-junit", str(junit), "--report-ctrf", str(report)])
    out, _ = capsys.readouterr()
    assert code == 1
    printed = [line for line in out.splitlines() if line[:1] in "✓✗!-"]

    cases = junit_cases(junit)
    assert len(cases) == len(printed)  # one test case per check the command printed
    pod, props = cases["driver-pod gpu-b-01"]
    assert isinstance(pod.result[0], Failure) and "ImagePullBackOff" in pod.result[0].message
    assert props["node"] == "gpu-b-01" and props["verdict"] == "fail" and props["hint"]
    smi, props = cases["nvidia-smi gpu-a-01"]
    assert smi.is_passed and props["verdict"] == "pass" and "NVIDIA-SMI" in (smi.system_out or "")  # its raw output
    digest, props = cases["image-digest gpu-a-02"]
    assert isinstance(digest.result[0], Skipped) and props["verdict"] == "skipped"
    assert "--no-registry was given" in digest.result[0].message
    assert "imageID:" in (digest.system_out or "")
    xml = JUnitXml.fromfile(str(junit))
    (suite,) = list(xml)
    assert suite.name.startswith("gpu-wizard verify ")
    assert suite.failures >= 1 and suite.skipped >= 2 and suite.tests == len(printed)

    doc = ctrf(report)
    tests = {t["name"]: t for t in doc["results"]["tests"]}
    assert len(tests) == len(printed) and doc["results"]["summary"]["tests"] == len(printed)
    failed = tests["driver-pod gpu-b-01"]
    assert failed["status"] == "failed" and failed["extra"]["node"] == "gpu-b-01" and failed["extra"]["hint"]
    assert tests["image-digest gpu-a-02"]["status"] == "skipped"
    assert any("NVIDIA-SMI" in line for line in tests["nvidia-smi gpu-a-01"]["stdout"])
    assert doc["results"]["summary"]["failed"] == sum(1 for t in tests.values() if t["status"] == "failed") >= 1


def test_doctor_reports_warnings_as_failures_since_they_fail_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, report = tmp_path / "doctor.xml", tmp_path / "doctor.json"
    code = main(["doctor", "--demo", "nouveau-loaded", "--report-junit", str(junit), "--report-ctrf", str(report)])
    capsys.readouterr()
    assert code == 1
    cases = junit_cases(junit)
    nouveau = {props["node"]: (case, props) for case, props in cases.values() if case.name.startswith("nouveau-loaded")}
    assert set(nouveau) == {"gpu-l4-01", "gpu-l4-02"}
    case, props = nouveau["gpu-l4-01"]
    assert isinstance(case.result[0], Failure) and "update-initramfs -u" in props["hint"]
    tests = [t for t in ctrf(report)["results"]["tests"] if t["extra"]["check"] == "nouveau-loaded"]
    assert [t["status"] for t in tests] == ["failed", "failed"] and tests[0]["suite"][0] == "gpu-wizard doctor"


def test_drift_reports_each_difference_as_a_failed_case(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    plan = answers(tmp_path / "answers.yaml")
    assert main(["apply", "--answers", str(plan), *kube, "--yes", "--backup-dir", str(tmp_path)]) == 0
    newer = tmp_path / "newer.yaml"
    newer.write_text(plan.read_text().replace("580.126.09.1", "580.126.09.2"))
    junit, report = tmp_path / "drift.xml", tmp_path / "drift.json"
    capsys.readouterr()
    code = main(["drift", "--answers", str(newer), *kube, "--report-junit", str(junit), "--report-ctrf", str(report)])
    out, _ = capsys.readouterr()
    assert code == 1
    cases = junit_cases(junit)
    failed = sorted(name for name, (case, _) in cases.items() if not case.is_passed)
    assert len(failed) == len(out.splitlines()) - 1  # every line printed (less the count) is a failed case
    spec, props = cases["spec ClusterPolicy/cluster-policy spec.driver.version"]
    assert isinstance(spec.result[0], Failure) and "spec.driver.version" in spec.result[0].message
    assert props["verdict"] == "fail" and "gpu-wizard apply" in props["hint"]
    tests = {t["name"]: t for t in ctrf(report)["results"]["tests"]}
    assert tests["foreign-image gpu-h200-01"]["status"] == "failed"
    assert tests["foreign-image gpu-h200-01"]["extra"]["node"] == "gpu-h200-01"


def test_an_unusable_cluster_is_one_case_in_error_never_an_empty_passing_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, report = tmp_path / "v.xml", tmp_path / "v.json"
    missing = str(tmp_path / "no-kubeconfig")
    code = main(["verify", "--kubeconfig", missing, "--report-junit", str(junit), "--report-ctrf", str(report)])
    capsys.readouterr()
    assert code == 2
    ((case, props),) = junit_cases(junit).values()
    assert isinstance(case.result[0], Error) and "no kubeconfig found" in case.result[0].message
    assert props["verdict"] == "error"
    (test,) = ctrf(report)["results"]["tests"]
    assert test["status"] == "failed" and test["rawStatus"] == "error"


def test_a_report_that_cannot_be_written_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--demo", "ubuntu-upstream", "--report-ctrf", str(tmp_path)])  # a folder
    _, err = capsys.readouterr()
    assert code == 2 and err.splitlines()[-1] == (
        f"gpu-wizard: error: {tmp_path}: cannot write: it is a folder; give a file name; "
        "the previous file (if any) is unchanged"
    )


def test_exit_codes_are_documented_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("verify", "doctor", "drift"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert "Exit 0:" in text and "1:" in text and "2: bad input or an unusable cluster" in text, command
        assert "--report-junit FILE" in text and "--report-ctrf FILE" in text
