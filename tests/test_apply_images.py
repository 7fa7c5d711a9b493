"""``apply`` and the driver images: a missing image or a check that could not run stops it (exit 1), unless
``--allow-missing-images``; the refusal names the image and comes before any write or backup."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main

ANSWERS = """version: 1
mode: precompiled
driver:
  version: '580.126.09.1'
  repository: registry.example.com/mlops
"""
IMAGE = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"


def test_apply_refuses_when_the_registry_cannot_be_asked(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    demo.faults.only, demo.faults.error_rate, demo.faults.error_code = ["/v2/"], 1.0, 401  # the registry refuses us
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    argv = ["apply", "--answers", str(tmp_path / "answers.yaml"), "--kubeconfig", str(demo.kubeconfig_path)]
    argv += ["--yes", "--no-wait", "--backup-dir", str(tmp_path / "backups")]

    code = main(argv)
    _, err = capsys.readouterr()
    assert code == 1 and "could not check 1 driver image(s)" in err and IMAGE in err, err
    assert "nothing applied" in err and "--allow-missing-images" in err
    assert demo.store.get("clusterpolicies", "cluster-policy") is None and not (tmp_path / "backups").exists()

    code = main([*argv, "--allow-missing-images"])
    _, err = capsys.readouterr()
    assert code == 0 and f"! image {IMAGE}: cannot check" in err, err
    assert demo.store.get("clusterpolicies", "cluster-policy") is not None
