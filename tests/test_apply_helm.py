"""A ClusterPolicy that a Helm release owns: the change goes into the release's values, not a direct apply.

A server-side apply on such an object is reverted by the next ``helm upgrade`` (Helm's three-way
merge); ``apply`` and ``upgrade`` write the values file and print the exact ``helm upgrade`` instead,
unless ``--override-helm``. The demo's ``existing-install`` carries Helm's labels and annotations;
``existing-install-plain`` is the same policy made by hand.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.helpers.cli import run_cli as _run
from tests.helpers.fixtures.demo import ClusterFactory

ANSWERS = "version: 1\noperator: {version: v26.3.3}\nmode: upstream\ndriver: {version: 580.126.20, repository: nvcr.io/nvidia}\n"


def test_apply_on_a_helm_release_writes_values_and_the_helm_command(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install")
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    values = tmp_path / "my values.yaml"
    before = demo.store.get("clusterpolicies", "cluster-policy")
    for extra in (["--dry-run"], ["--yes"]):  # a dry run and a real one both go through Helm
        code, out, err = _run(
            capsys, "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path),
            "--helm-values", str(values), "--backup-dir", str(tmp_path / "backups"), *extra,
        )  # fmt: skip
        assert code == 0, err
        assert "Helm release gpu-operator (namespace gpu-operator) manages ClusterPolicy cluster-policy" in err
        command = next(line.strip() for line in err.splitlines() if line.strip().startswith("helm upgrade"))
        assert shlex.split(command) == [
            "helm", "upgrade", "gpu-operator", "nvidia/gpu-operator", "-n", "gpu-operator",
            "--version", "v26.3.3", "--reuse-values", "-f", str(values),
        ]  # fmt: skip
        written = YAML(typ="safe").load(values.read_text())
        assert written["driver"]["version"] == "580.126.20" and written["toolkit"]["installDir"]
        assert values.stat().st_mode & 0o777 == 0o600 and out == values.read_text()
    assert demo.store.get("clusterpolicies", "cluster-policy") == before  # nothing applied
    assert not (tmp_path / "backups").exists()  # and so no backup

    code, _, err = _run(
        capsys, "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes",
        "--no-wait", "--override-helm", "--force-conflicts", "--backup-dir", str(tmp_path / "backups"),
    )  # fmt: skip
    assert code == 0, err
    assert "! owner: Helm release" in err and "applied" in err  # said, then done as asked
    after = demo.store.get("clusterpolicies", "cluster-policy")
    assert after is not None and after["spec"]["driver"]["version"] == "580.126.20"


def test_upgrade_on_a_policy_nobody_owns_applies_and_rolls_out(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install-plain")
    code, out, err = _run(
        capsys, "upgrade", "--driver", "580.126.20", "--kubeconfig", str(demo.kubeconfig_path), "--yes",
        "--backup-dir", str(tmp_path / "backups"), "--wait-timeout", "60",
    )  # fmt: skip
    assert code == 0, err
    assert "after  nvcr.io/nvidia/driver:580.126.20-ubuntu22.04  ✓ in the registry" in out
    assert "-    version: 570.195.03\n+    version: 580.126.20" in out  # the diff
    assert "rollout: ready" in err and "backup:" in err
    live = demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None and live["spec"]["driver"]["version"] == "580.126.20"


def test_upgrade_on_a_helm_release_ends_with_the_helm_command(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install")
    code, out, err = _run(
        capsys, "upgrade", "--driver", "580.126.20", "--kubeconfig", str(demo.kubeconfig_path), "--yes",
        "--helm-values", str(tmp_path / "v.yaml"),
    )  # fmt: skip
    assert code == 0, err
    assert "Upgrade plan: driver 570.195.03 → 580.126.20" in out and "not applied: the change is in" in err
    live = demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None and live["spec"]["driver"]["version"] == "570.195.03"


def test_a_helm_owned_change_without_helm_names_the_leftovers_to_delete(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Precompiled (applied over Helm's head), then pre-installed through Helm: the operator would leave the
    per-kernel driver DaemonSet behind; without helm on PATH the printed steps end with its deletion."""
    import time

    from wizard.engine.naming import precompiled_daemonset_name

    demo = demo_cluster("existing-install")
    kube = ["--kubeconfig", str(demo.kubeconfig_path), "--backup-dir", str(tmp_path / "b")]
    precompiled = tmp_path / "precompiled.yaml"
    precompiled.write_text(
        "version: 1\noperator: {version: v26.3.3}\nmode: precompiled\n"
        "driver: {version: '580', repository: nvcr.io/nvidia}\n"
    )
    code, _, err = _run(
        capsys, "apply", "--answers", str(precompiled), *kube, "--yes", "--no-wait", "--no-registry",
        "--override-helm", "--force-conflicts",
    )  # fmt: skip
    assert code == 0, err
    per_kernel = precompiled_daemonset_name("5.15.0-1048-nvidia", "ubuntu22.04")
    deadline = time.monotonic() + 60
    while demo.store.get("daemonsets", per_kernel, "gpu-operator") is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert demo.store.get("daemonsets", per_kernel, "gpu-operator") is not None
    preinstalled = tmp_path / "preinstalled.yaml"
    preinstalled.write_text("version: 1\noperator: {version: v26.3.3}\nmode: preinstalled\n")
    code, _, err = _run(
        capsys, "apply", "--answers", str(preinstalled), *kube, "--yes", "--no-registry",
        "--helm-values", str(tmp_path / "v.yaml"), "--allow-unverified-preinstalled",
    )  # fmt: skip
    assert code == 0, err
    assert "not applied: the change is in" in err
    assert (
        f"  then delete DaemonSet gpu-operator/{per_kernel}, left by the operator when the driver is disabled "
        f"(it deletes only nvidia-driver-daemonset):\n  kubectl delete daemonset -n gpu-operator {per_kernel}\n"
    ) in err, err
    assert demo.store.get("daemonsets", per_kernel, "gpu-operator") is not None  # printed, not done


def test_a_new_release_of_a_helm_install_is_a_chart_upgrade(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cluster runs v26.3.3 from Helm release gpu-operator, the upgrade targets v26.7.0: not a release mismatch
    but an upgrade of that release to the new chart, over the new chart's defaults (``--reuse-values`` keeps the
    old chart's values whole, and the new templates fail on them: the lane's v25.10.1 -> v26.3.3); a direct apply
    is refused."""
    demo = demo_cluster("existing-install")
    kube = ["--kubeconfig", str(demo.kubeconfig_path), "--no-registry", "--backup-dir", str(tmp_path / "b")]
    values = tmp_path / "v.yaml"
    upgrade = ["upgrade", "--driver", "580.126.20", "--operator", "v26.7.0", *kube, "--yes"]
    code, _, err = _run(capsys, *upgrade, "--helm-values", str(values))
    assert code == 0, err
    assert (
        "! release: the cluster runs GPU Operator v26.3.3, the plan targets v26.7.0: Helm release gpu-operator is "
        "upgraded to the v26.7.0 chart"
    ) in err, err
    command = next(line.strip() for line in err.splitlines() if line.strip().startswith("helm upgrade"))
    assert shlex.split(command) == [
        "helm", "upgrade", "gpu-operator", "nvidia/gpu-operator", "-n", "gpu-operator",
        "--version", "v26.7.0", "--reset-then-reuse-values", "-f", str(values),
    ]  # fmt: skip
    code, _, err = _run(capsys, *upgrade, "--override-helm", "--force-conflicts")
    assert code == 2 and "--override-helm: the cluster runs GPU Operator v26.3.3" in err, err
    live = demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None and live["spec"]["driver"]["version"] == "570.195.03"
