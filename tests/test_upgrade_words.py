"""What the upgrade plan says when nothing changes: never that every node runs an image one cannot pull,
never "evicted: none" under the pods an upgrade under way still evicts, never "driver X → X".

``gpu-wizard upgrade --dry-run`` against the demo cluster over its real HTTPS API (the TUI's Apply step
shows the same lines, ``wizard.cluster.upgrading.upgrades.report_lines``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main


def _dry_run(
    demo_cluster: ClusterFactory, scenario: str, version: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    demo = demo_cluster(scenario)
    argv = ["upgrade", "--driver", version, "--dry-run", "--kubeconfig", str(demo.kubeconfig_path)]
    code = main([*argv, "--backup-dir", str(tmp_path / "b"), "--allow-missing-images"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_kernel_drift_nothing_changes_but_a_node_runs_no_driver(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _dry_run(demo_cluster, "kernel-drift", "580", tmp_path, capsys)
    assert out.splitlines()[0] == "Upgrade plan: driver 580 (unchanged) (operator v26.7.0)"
    assert "every GPU node already runs" not in out
    assert "but 1 GPU node(s) do not run theirs:" in out
    assert "  gpu-h100-03: its driver container is ImagePullBackOff (nvcr.io/nvidia/driver:580-5.15.0-1063" in out


def test_an_upgrade_under_way_names_its_evictions_once(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _dry_run(demo_cluster, "upgrade-in-progress", "580.126.20", tmp_path, capsys)
    assert "580.126.20 → 580.126.20" not in out
    assert "still to be evicted on gpu-a100-08: ml-team/train-llm-0" in out
    assert "GPU workloads evicted: none found" not in out
    assert "none beyond those the upgrade under way evicts" in out
