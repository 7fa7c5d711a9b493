"""Nodes kept out of the driver rollout (``driver.excludeNodes``) where the plan goes through Helm.

A direct apply labels them ``nvidia.com/gpu.deploy.driver=false`` (tests/test_exclude_nodes.py); an operator
install labels them before the operator exists, so its first reconcile never schedules the driver there; a
Helm-owned change labels them after its ``helm upgrade``, or prints the ``kubectl label`` after the helm command
where helm is not on PATH. A name the cluster lacks is one line naming the field. Against the demo over real HTTPS;
the same with the real helm and operator is in tests/realcluster/test_helm_owned_real.py.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as _run
from tests.helpers.cluster import scenario
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.helpers.operator_chart import run_the_printed_command
from wizard.demo.scenarios.scenario import OperatorSpec
from wizard.engine.facts import LABEL_DEPLOY_DRIVER

RELEASE = "v26.7.0"
KEPT_OUT = "gpu-h200-02"


def _kept_out_with_its_own_driver(name: str, group: str, node: str, **changes: Any) -> Any:
    """Scenario ``name`` with ``node`` (of the group ``group``) running its own host driver, which the operands the
    operator still runs there use (without one they would wait forever: tests/test_exclude_nodes.py)."""
    loaded = scenario(name, **changes)
    out = []
    for spec in loaded.nodes:
        if spec.name != group:
            out.append(spec)
            continue
        names = [f"{group}-{i:02d}" for i in range(1, spec.count + 1)]
        assert node in names, names
        out += [
            dataclasses.replace(spec, count=1, name=n, host_driver="580.126.20" if n == node else "") for n in names
        ]
    loaded.nodes = out
    return loaded


def _label(demo: Any, node: str) -> str | None:
    return (demo.store.get("nodes", node)["metadata"].get("labels") or {}).get(LABEL_DEPLOY_DRIVER)


def _no_operator() -> Any:
    return _kept_out_with_its_own_driver(
        "sle-micro-precompiled", "gpu-h200", KEPT_OUT, operator=OperatorSpec(installed=False, crds=False)
    )


def test_an_install_labels_the_excluded_node_before_the_operator_starts(
    demo_cluster: ClusterFactory,
    kubectl: Kubectl,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    demo = demo_cluster(_no_operator())
    assert _label(demo, KEPT_OUT) != "false"
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\noperator: {{version: {RELEASE}}}\nmode: precompiled\n"
        f"driver: {{version: 580.126.09.1, repository: registry.example.com/mlops, excludeNodes: [{KEPT_OUT}]}}\n"
    )
    values = tmp_path / "values.yaml"
    monkeypatch.setenv("PATH", str(tmp_path))  # no helm: the person runs the printed command
    seen: list[str | None] = []

    def person() -> None:
        """Runs the command once it is printed; what the node's label was at that moment is kept."""
        deadline = time.monotonic() + 30
        while not values.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        while _label(demo, KEPT_OUT) != "false" and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append(_label(demo, KEPT_OUT))
        run_the_printed_command(RELEASE, values, kubectl, demo, [])

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    code, out, err = _run(
        capsys, "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--install-operator",
        "--yes", "--helm-values", str(values), "--wait-timeout", "120", "--no-registry", "--no-wait",
    )  # fmt: skip
    thread.join(timeout=60)
    assert code == 0, err
    assert (
        f"  first, Node/{KEPT_OUT}: label {LABEL_DEPLOY_DRIVER} (none) -> false (kept out of the driver rollout)" in out
    )
    assert f"; labelled {LABEL_DEPLOY_DRIVER}=false on {KEPT_OUT}" in err, err
    assert seen == ["false"], seen  # labelled before the person could install: the first reconcile obeys it
    deadline = time.monotonic() + 60
    while not (pods := _driver_pods(demo)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pods == ["gpu-h200-01"], pods  # the first driver DaemonSet never reached the excluded node


def _driver_pods(demo: Any) -> list[str]:
    """The nodes driver pods are on."""
    pods = demo.store.list("pods", "gpu-operator")
    return sorted(str(p["spec"].get("nodeName")) for p in pods if p["metadata"]["name"].startswith("nvidia-driver"))


def test_an_install_dry_run_prints_the_label_before_the_helm_command(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster(_no_operator())
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\noperator: {{version: {RELEASE}}}\nmode: precompiled\n"
        f"driver: {{version: 580.126.09.1, repository: registry.example.com/mlops, excludeNodes: [{KEPT_OUT}]}}\n"
    )
    code, out, err = _run(
        capsys, "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--install-operator",
        "--dry-run", "--helm-values", str(tmp_path / "v.yaml"), "--no-registry",
    )  # fmt: skip
    assert code == 0, err
    assert (
        f"dry run: nothing installed; the commands:\n  kubectl label node {KEPT_OUT} {LABEL_DEPLOY_DRIVER}=false "
        "--overwrite\n  helm upgrade --install gpu-operator"
    ) in out, out
    assert _label(demo, KEPT_OUT) != "false"  # printed, not done


def test_a_helm_owned_change_without_helm_prints_the_label_after_the_upgrade(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    node = "gpu-a100-02"
    demo = demo_cluster(_kept_out_with_its_own_driver("existing-install", "gpu-a100", node))
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\n"
        f"driver: {{version: 580.126.20, repository: nvcr.io/nvidia, excludeNodes: [{node}]}}\n"
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    kube = ["--kubeconfig", str(demo.kubeconfig_path), "--backup-dir", str(tmp_path / "b"), "--no-registry"]
    code, _, err = _run(
        capsys, "apply", "--answers", str(answers), *kube, "--yes", "--helm-values", str(tmp_path / "v")
    )
    assert code == 0, err
    assert "not applied: the change is in" in err, err
    before = _label(demo, node)
    assert (
        f"  then Node/{node}: label {LABEL_DEPLOY_DRIVER} {before} -> false (kept out of the driver rollout):\n"
        f"  kubectl label node {node} {LABEL_DEPLOY_DRIVER}=false --overwrite\n"
    ) in err, err
    assert before != "false"  # printed, not done

    gone = tmp_path / "gone.yaml"
    gone.write_text(answers.read_text().replace(f"[{node}]", f"[{node}, gpu-gone]"))
    code, _, err = _run(capsys, "apply", "--answers", str(gone), *kube, "--yes", "--helm-values", str(tmp_path / "v"))
    assert code != 0
    assert "driver.excludeNodes: node gpu-gone is not in the cluster" in err and "Traceback" not in err, err


def test_the_undo_of_a_helm_change_puts_the_node_labels_back_too() -> None:
    """``helm rollback`` restores the values, not the labels the change wrote: the TUI's undo names both."""
    from screens.apply_text import helm_undo
    from wizard.engine.ownership import Ownership

    owner = Ownership("helm", "cluster-policy", "gpu-operator", "gpu-ops")
    assert helm_undo(owner, {}) == "helm rollback gpu-operator --namespace gpu-ops"
    assert helm_undo(owner, {"rtx-2": "true", "rtx-1": None}) == (
        "helm rollback gpu-operator --namespace gpu-ops"
        f" && kubectl label node rtx-1 {LABEL_DEPLOY_DRIVER}-"
        f" && kubectl label node rtx-2 {LABEL_DEPLOY_DRIVER}=true --overwrite"
    )
