"""Verifying a plan the live objects do not hold says so and what to run first, instead of failing every node.

``gpu-wizard verify --answers`` against the demo cluster over its real HTTPS API: a Helm-owned policy
still on driver 570.195.03 verified against a 580.126.20 plan (the values were saved, helm not run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures_demo import ClusterFactory
from wizard.cli.main import main


def test_a_plan_not_applied_yet_is_one_finding_with_the_helm_upgrade_to_run(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\n"
        "driver: {version: 580.126.20, repository: nvcr.io/nvidia}\n"
    )
    code = main(["verify", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--no-registry"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert (
        "✗ plan-applied: the live ClusterPolicy cluster-policy still asks for driver 570.195.03, the plan for "
        "580.126.20: the plan is not applied yet" in out
    ), out
    assert "helm upgrade` of release gpu-operator" in out, out
    assert "driver-image" not in out and "nvidia-smi" not in out  # no node judged against an image nobody asked for
    assert out.rstrip().endswith("✗ summary: not verified: the live objects do not hold the plan (see above)"), out
    assert "diagnosis" not in out  # no pod was judged, so none is explained


def test_a_new_upgrade_policy_alone_does_not_count_as_not_applied(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install-plain")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\n"
        "driver: {version: 570.195.03, repository: nvcr.io/nvidia, upgradePolicy: {maxParallelUpgrades: 3}}\n"
    )
    main(["verify", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--no-registry"])
    out, _ = capsys.readouterr()
    assert "plan-applied" not in out and "nvidia-smi" in out, out
