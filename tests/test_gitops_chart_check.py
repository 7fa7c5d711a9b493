"""The bundle's values through the operator's real chart (issue 36 item 1: "the bundle of a plan that Helm would
reject … carries the same findings as Preview"): ``helm template`` of a local chart with the lane's real helm where it
is built, the chart rendered offline by helm-python-sdk (Helm's library) otherwise; a values change the chart's
templates ``fail`` on and one the CRD refuses in the chart's ClusterPolicy are findings; without helm or a local
chart the bundle says its values were not rendered through the chart."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chart_parity import NODES, _chart_dir, render_chart
from tests.helpers.render_cases import facts, nodelist
from wizard.cli.main import main
from wizard.engine import chart_check
from wizard.engine.gitops import gitops_bundle
from wizard.engine.operator_install import chart_source, operator_install
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, render, values_yaml

RELEASE = "v26.3.3"
ANSWERS = (
    f"version: 1\noperator: {{version: {RELEASE}}}\nmode: upstream\n"
    "driver: {version: 580.126.20, repository: registry.example.com/nvidia}\n"
)
NRI = {"cdi": {"enabled": False, "nriPluginEnabled": True}}  # the chart's validations.yaml fails on it
NRI_REFUSAL = "the NRI Plugin cannot be enabled when CDI is disabled"


def _rendered() -> Rendered:
    plan = Plan.model_validate({"operator": {"version": RELEASE}, "mode": "upstream",
                                "driver": {"version": "580.126.20", "repository": "registry.example.com/nvidia"}})  # fmt: skip
    return render(plan, facts(*NODES))


def _lane_helm() -> Path | None:
    """The lane's helm (built from helm.sh/helm/v4 by tests/realcluster/build.py), when this machine has built it."""
    named = os.environ.get("GPU_WIZARD_HELM")
    if named:
        return Path(named)
    if shutil.which("go") is None:
        return None
    from tests.realcluster.build import CACHE_ROOT, cache_key

    helm = CACHE_ROOT / cache_key() / "bin" / "helm"
    return helm if helm.is_file() else None


@pytest.fixture
def helm() -> Path:
    found = _lane_helm()
    if found is None:
        pytest.skip("the lane's helm is not built here (python -m tests.realcluster.build)")
    return found


def _with_values(rendered: Rendered, chart: str | None, extra: dict[str, Any]) -> Any:
    install = operator_install(rendered, chart_source(RELEASE, chart))
    values = {**install.values, **extra}
    return dataclasses.replace(install, values=values, values_text=values_yaml(values))


def _chart_text(values: dict[str, Any]) -> str:
    """The whole chart rendered by Helm's library (as helm template prints it)."""
    from helm_python.chart import Chart

    with Chart.load(str(_chart_dir(RELEASE))) as chart:
        files = chart.render(values=values, name="gpu-operator", namespace="gpu-operator", is_install=True)
    return "".join(f"---\n# Source: {name}\n{text}\n" for name, text in sorted(files.items()))


def test_the_chart_objects_the_crd_refuses_are_findings() -> None:
    """The chart renders the values (Helm's library); what the wizard's own objects do not show, the chart's do:
    a value the template writes into the ClusterPolicy where the CRD wants an integer."""
    pytest.importorskip("helm_python.chart")
    install = operator_install(_rendered())
    good = chart_check.rendered("helm template", _chart_text(install.values), RELEASE)
    assert good.ran and good.findings == ()
    policy = {**install.values["driver"], "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": "three"}}
    bad = chart_check.rendered("helm template", _chart_text({**install.values, "driver": policy}), RELEASE)
    assert [line for line in bad.findings if "ClusterPolicy" in line and "maxParallelUpgrades" in line], bad.findings
    assert render_chart(RELEASE, json.dumps(install.values))  # the oracle agrees the good values render


def test_helm_template_of_a_local_chart_refuses_what_the_chart_fails_on(helm: Path) -> None:
    from wizard.cluster.facade import check_chart

    chart = str(_chart_dir(RELEASE))
    rendered = _rendered()
    good = asyncio.run(check_chart(_with_values(rendered, chart, {}), str(helm)))
    assert (good.ran, good.findings) == (True, ()), good
    install = _with_values(rendered, chart, NRI)
    refused = asyncio.run(check_chart(install, str(helm)))
    assert refused.ran and len(refused.findings) == 1 and NRI_REFUSAL in refused.findings[0], refused
    bundle = gitops_bundle(rendered, "helm", install=install, chart=refused)
    assert bundle.blocked and NRI_REFUSAL in bundle.files["FINDINGS"]
    assert "see `FINDINGS`" in bundle.files["README.md"]
    # bounded in time: a helm that takes longer is not a pass
    slow = asyncio.run(check_chart(install, str(helm), timeout=0.001))
    assert not slow.ran and "did not finish within" in slow.how


def test_the_cli_renders_a_local_chart_with_helm_on_path(
    helm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    answers, nodes = tmp_path / "answers.yaml", tmp_path / "nodes.json"
    answers.write_text(ANSWERS)
    nodes.write_text(json.dumps(nodelist(*NODES)))
    chart = _chart_dir(RELEASE)
    argv = ["bundle", "--deployer", "helm", "--answers", str(answers), "--nodes", str(nodes), "--chart", str(chart)]
    assert main([*argv, "-o", str(tmp_path / "out")]) == 0
    _, err = capsys.readouterr()
    assert "! chart:" not in err
    assert (
        f"rendered through the operator's chart (helm template of chart {chart})"
        in (tmp_path / "out" / "README.md").read_text()
    )


def test_without_helm_or_a_local_chart_the_bundle_says_it_did_not_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answers, nodes = tmp_path / "answers.yaml", tmp_path / "nodes.json"
    answers.write_text(ANSWERS)
    nodes.write_text(json.dumps(nodelist(*NODES)))
    argv = ["bundle", "--deployer", "helm", "--answers", str(answers), "--nodes", str(nodes)]
    assert main([*argv, "-o", str(tmp_path / "remote")]) == 0
    _, err = capsys.readouterr()
    assert "! chart: values not rendered through the chart (the chart is not a local folder (chart gpu-operator" in err
    readme = (tmp_path / "remote" / "README.md").read_text()
    assert "The values were **not** rendered through the operator's chart" in readme and "This is not a pass" in readme
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main([*argv, "--chart", str(tmp_path), "-o", str(tmp_path / "nohelm")]) == 0
    assert "! chart: values not rendered through the chart (helm is not on PATH)" in capsys.readouterr().err
