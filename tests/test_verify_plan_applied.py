"""Verifying a plan the live objects do not hold says so and what to run first, instead of failing every node.

``gpu-wizard verify --answers`` against the demo cluster over its real HTTPS API: a Helm-owned policy
still on driver 570.195.03 verified against a 580.126.20 plan (the values were saved, helm not run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main

PLAN = "version: 1\noperator: {{version: v26.3.3}}\nmode: upstream\ndriver: {{repository: nvcr.io/nvidia, {driver}}}\n"


def _verify(demo_cluster: ClusterFactory, scenario: str, driver: str, tmp_path: Path, capsys: Any) -> tuple[int, str]:
    """``gpu-wizard verify`` of the upstream plan with ``driver`` (answers YAML) on ``scenario``: (exit code, stdout)."""
    demo = demo_cluster(scenario)
    answers = tmp_path / "answers.yaml"
    answers.write_text(PLAN.format(driver=driver))
    code = main(["verify", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--no-registry"])
    out, _ = capsys.readouterr()
    return code, out


def test_a_plan_not_applied_yet_is_one_finding_with_the_helm_upgrade_to_run(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _verify(demo_cluster, "existing-install", "version: 580.126.20", tmp_path, capsys)
    assert code == 1, out
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
    driver = "version: 570.195.03, upgradePolicy: {maxParallelUpgrades: 3}"
    _, out = _verify(demo_cluster, "existing-install-plain", driver, tmp_path, capsys)
    assert "plan-applied" not in out and "nvidia-smi" in out, out
