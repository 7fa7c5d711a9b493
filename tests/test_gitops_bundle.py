"""GitOps bundles (issue 36 item 1): each deployer's values render, through the operator's real chart, the
ClusterPolicy the wizard's own apply creates, for the hidden-style plans; the helm deployer's one helm line is the
engine's argv; the CLI writes the folder, its checksums, and a plan's blocking findings with a non-zero exit.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chart_parity import (
    CASE_NODES,
    CASES,
    NODES,
    RELEASES,
    _allowance,
    _compared,
    differences,
    render_chart,
)
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.render_cases import facts, nodelist
from tests.helpers.yaml11 import yaml11_load_all
from wizard.cli.main import main
from wizard.engine.gitops import DEPLOYERS, gitops_bundle
from wizard.engine.operator_install import operator_install
from wizard.engine.plan import Plan
from wizard.engine.releases import rules
from wizard.engine.render import Rendered, render, to_yaml

#: The issue's hidden-style plans: precompiled SLE Micro, upstream air-gapped RHEL, pre-installed, NVIDIADriver CRs.
PLANS = (
    "precompiled-rke2",
    "operand-registry",
    "preinstalled",
    "operand-registry-nvidiadriver",
    "nvidiadriver-precompiled",
)
"""The last: a branch (``580``) the v25.10/v26.3 charts write unquoted, so CR ``default`` travels beside the release."""


def _rendered(release: str, case: str) -> Rendered:
    answers = {"operator": {"version": release}, **CASES[case]}
    return render(Plan.model_validate(answers), facts(*CASE_NODES.get(case, NODES)))


def _docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml11_load_all(text) if d]


def carried_values(deployer: str, files: dict[str, str], release: str) -> dict[str, Any]:
    """The values the deployer hands Helm, read from the bundle as that deployer reads them."""
    chart = rules(release).helmChart
    if deployer == "helm":
        return _docs(files["values.yaml"])[0]
    if deployer == "helmfile":
        [doc] = _docs(files["helmfile.yaml"])
        [repo] = doc["repositories"]
        [rel] = doc["releases"]
        assert rel["chart"] == f"{repo['name']}/{chart.name}" and repo["url"] == chart.repository
        assert (rel["version"], rel["namespace"], rel["name"]) == (release, "gpu-operator", "gpu-operator")
        [values_file] = rel["values"]
        return _docs(files[values_file])[0]
    if deployer == "argocd":
        [app] = _docs(files["application.yaml"])
        source = app["spec"]["source"]
        assert (source["repoURL"], source["chart"], source["targetRevision"]) == (chart.repository, chart.name, release)
        assert {"ServerSideApply=true", "CreateNamespace=true"} <= set(app["spec"]["syncPolicy"]["syncOptions"])
        assert app["spec"]["destination"]["namespace"] == "gpu-operator"
        return dict(source["helm"]["valuesObject"])
    docs = {d["kind"]: d for d in _docs(files["helmrelease.yaml"])}
    hr, repo = docs["HelmRelease"], docs["HelmRepository"]
    assert repo["spec"]["url"] == chart.repository
    spec = hr["spec"]
    assert spec["chart"]["spec"]["version"] == release and spec["chart"]["spec"]["chart"] == chart.name
    assert spec["chart"]["spec"]["sourceRef"] == {"kind": "HelmRepository", "name": repo["metadata"]["name"]}
    assert spec["install"]["crds"] == spec["upgrade"]["crds"] == "CreateReplace"
    return dict(spec["values"])


@pytest.mark.parametrize("deployer", DEPLOYERS)
@pytest.mark.parametrize("case", PLANS)
@pytest.mark.parametrize("release", RELEASES)
def test_each_deployers_values_render_the_cluster_policy_apply_creates(release: str, case: str, deployer: str) -> None:
    pytest.importorskip("helm_python.chart")
    rendered = _rendered(release, case)
    bundle = gitops_bundle(rendered, deployer)
    values = carried_values(deployer, bundle.files, release)
    chart_docs = render_chart(release, json.dumps(values, sort_keys=True))
    [chart_policy] = [d for d in chart_docs if d["kind"] == "ClusterPolicy"]
    [ours] = [d for d in _docs(to_yaml([rendered.cluster_policy]))]
    problems = [
        f"{path}: chart {theirs!r}, wizard {mine!r}"
        for path, theirs, mine in differences(_compared(chart_policy), _compared(ours))
        if _allowance(release, case, f"ClusterPolicy:{path}") is None
    ]
    assert not problems, problems
    # the same install apply --install-operator runs: identical values (Argo CD's may add the CRs as extraObjects)
    extra = values.pop("extraObjects", [])
    assert values == _docs(operator_install(rendered).values_text)[0]
    # every NVIDIADriver CR of the plan: the chart's default, the rest in the bundle's file
    drivers_file = "drivers/nvidiadrivers.yaml" if deployer == "flux" else "nvidiadrivers.yaml"
    crs = [d for d in chart_docs if d["kind"] == "NVIDIADriver"] + _docs(bundle.files.get(drivers_file, ""))
    assert sorted(d["metadata"]["name"] for d in crs) == sorted(d["metadata"]["name"] for d in rendered.nvidia_drivers)
    if extra or drivers_file in bundle.files:  # applied after the release has installed the CRD
        assert release in ("v25.10.1", "v26.3.3") and case == "nvidiadriver-precompiled"
        applied = {"helm": "deploy.sh", "helmfile": "helmfile.yaml"}.get(deployer, "README.md")
        assert "nvidiadrivers.yaml" in bundle.files[applied] or deployer == "argocd"
        if deployer == "argocd":  # in the chart's own render (v26.3 on), a later wave, no dry-run before the CRD
            assert bool(extra) == (release != "v25.10.1"), release
            [note] = {d["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] for d in crs[-1:]}
            assert note == "SkipDryRunOnMissingResource=true"
    # the air-gap image lists and the private registry travel in every format
    assert bundle.files["images/images.txt"].splitlines() == sorted(set(bundle.files["images/images.txt"].split()))
    assert {"images/hauler.yaml", "images/zarf.yaml", "README.md", "SHA256SUMS"} <= set(bundle.files)
    if rendered.plan.driver.operandRegistry:
        assert "private registry harbor.corp.example" in bundle.files["README.md"]
        assert "--chart oci://" in bundle.files["README.md"]  # the chart's own way into the air gap
        assert values["operator"]["repository"].startswith("harbor.corp.example/")


def test_the_deploy_scripts_helm_line_is_the_engines_argv() -> None:
    rendered = _rendered("v26.3.3", "precompiled-rke2")
    script = gitops_bundle(rendered, "helm").files["deploy.sh"]
    [line] = [line for line in script.splitlines() if line.startswith("helm ")]
    assert shlex.split(line) == operator_install(rendered).helm_argv("values.yaml")
    assert "--version v26.3.3" in line and "--namespace gpu-operator" in line


def test_pull_secrets_go_into_every_format() -> None:
    case = CASES["upstream-repoconfig"]  # imagePullSecrets: [regcred]
    rendered = render(Plan.model_validate({"operator": {"version": "v26.3.3"}, **case}), facts(*NODES))
    for deployer in DEPLOYERS:
        files = gitops_bundle(rendered, deployer).files
        values = carried_values(deployer, files, "v26.3.3")
        assert values["driver"]["imagePullSecrets"] == ["regcred"], deployer
        assert "namespace gpu-operator before the sync: regcred." in files["README.md"], deployer


def test_an_unknown_deployer_and_a_local_chart_for_argocd_are_refused() -> None:
    rendered = _rendered("v26.3.3", "preinstalled")
    with pytest.raises(ValueError, match="--deployer"):
        gitops_bundle(rendered, "kustomize")
    from wizard.engine.operator_install import chart_source

    install = operator_install(rendered, chart_source("v26.3.3", "./charts/gpu-operator"))
    with pytest.raises(ValueError, match="oci://"):
        gitops_bundle(rendered, "argocd", install=install)


def test_an_oci_chart_is_pinned_in_argocd_and_flux() -> None:
    from wizard.engine.operator_install import chart_source

    rendered = _rendered("v26.3.3", "preinstalled")
    install = operator_install(rendered, chart_source("v26.3.3", "oci://harbor.corp.example/charts/gpu-operator"))
    [app] = _docs(gitops_bundle(rendered, "argocd", install=install).files["application.yaml"])
    source = app["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        "harbor.corp.example/charts",
        "gpu-operator",
        "v26.3.3",
    )
    docs = {d["kind"]: d for d in _docs(gitops_bundle(rendered, "flux", install=install).files["helmrelease.yaml"])}
    assert docs["OCIRepository"]["spec"]["url"] == "oci://harbor.corp.example/charts/gpu-operator"
    assert docs["OCIRepository"]["spec"]["ref"] == {"tag": "v26.3.3"}
    assert docs["HelmRelease"]["spec"]["chartRef"] == {"kind": "OCIRepository", "name": "nvidia"}


@pytest.mark.parametrize("release", ["v25.10.1", "v26.3.3"])
def test_flux_applies_the_extra_nvidiadriver_crs_only_after_the_helmrelease_is_ready(release: str) -> None:
    """On a fresh cluster the CRs' CRD comes with the chart: a Kustomization holding both the HelmRelease and the CRs
    fails its dry-run. The CRs get a Kustomization of their own that depends on the HelmRelease's, which is ready only
    once the HelmRelease is; each Kustomization's kustomization.yaml names only its own files."""
    rendered = _rendered(release, "nvidiadriver-precompiled")
    files = gitops_bundle(rendered, "flux", git_path="./clusters/gpu").files
    assert "nvidiadrivers.yaml" not in files and "nvidiadrivers.yaml" not in _docs(files["helmrelease.yaml"])
    assert {d["kind"] for d in _docs(files["helmrelease.yaml"])} == {"Namespace", "HelmRepository", "HelmRelease"}
    [top] = _docs(files["kustomization.yaml"])
    [below] = _docs(files["drivers/kustomization.yaml"])
    assert (top["resources"], below["resources"]) == (["helmrelease.yaml"], ["nvidiadrivers.yaml"])
    assert {d["kind"] for d in _docs(files["drivers/nvidiadrivers.yaml"])} == {"NVIDIADriver"}
    operator, drivers = _docs(files["flux-kustomizations.yaml"])
    assert operator["spec"]["path"] == "./clusters/gpu" and drivers["spec"]["path"] == "./clusters/gpu/drivers"
    assert operator["spec"]["healthChecks"] == [
        {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "name": "gpu-operator",
         "namespace": "gpu-operator"}
    ]  # fmt: skip
    assert drivers["spec"]["dependsOn"] == [{"name": operator["metadata"]["name"]}]
    assert "dependsOn" not in operator["spec"] and "flux-kustomizations.yaml" in files["README.md"]
    # a plan whose CRs the chart deploys itself needs no second Kustomization
    plain = gitops_bundle(_rendered(release, "operand-registry-nvidiadriver"), "flux").files
    assert "flux-kustomizations.yaml" not in plain and "drivers/nvidiadrivers.yaml" not in plain


def test_the_git_path_is_a_relative_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers, nodes = _write_inputs(tmp_path, "version: 1\noperator: {version: v26.3.3}\nmode: preinstalled\n")
    argv = ["bundle", "--deployer", "flux", "--answers", answers, "--nodes", nodes]
    assert main([*argv, "-o", str(tmp_path / "a"), "--git-path", "../x"]) == 2
    assert "--git-path: a relative folder" in capsys.readouterr().err


def _write_inputs(tmp_path: Path, answers: str, *nodes: dict[str, Any]) -> tuple[str, str]:
    (tmp_path / "answers.yaml").write_text(answers)
    (tmp_path / "nodes.json").write_text(json.dumps(nodelist(*(nodes or NODES))))
    return str(tmp_path / "answers.yaml"), str(tmp_path / "nodes.json")


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_the_cli_writes_the_folder_with_checksums(
    deployer: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answers, nodes = _write_inputs(
        tmp_path,
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\n"
        "driver: {version: 580.126.20, repository: harbor.corp.example/nvidia, operandRegistry: harbor.corp.example}\n",
    )
    out = tmp_path / "out"
    code = main(["bundle", "--deployer", deployer, "--answers", answers, "--nodes", nodes, "-o", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    assert f"{deployer} bundle of GPU Operator v26.3.3" in stdout
    sums = (out / "SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in sums}
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert set(listed) == on_disk
    for name, digest in listed.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest
    assert not (out / "FINDINGS").exists()


def test_a_plan_with_blocking_findings_carries_them_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.render_cases import CP

    answers, nodes = _write_inputs(
        tmp_path,
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\ndriver: {version: 580.126.20, repository: registry.example.com/nvidia}\n",
        CP,
    )  # no GPU node: the driver would start nowhere
    out = tmp_path / "out"
    argv = ["bundle", "--deployer", "flux", "--answers", answers, "--nodes", nodes, "-o", str(out)]
    assert main(argv) == 1
    _, err = capsys.readouterr()
    assert "block this plan" in err and (out / "FINDINGS").read_text().startswith("✗ ")
    assert "FINDINGS" in (out / "README.md").read_text()
    assert main([*argv[:-1], str(tmp_path / "again"), "--allow-findings"]) == 0
    assert main(argv) == 2  # an existing, non-empty folder is never overwritten
    assert "not an empty folder" in capsys.readouterr().err


DEMO_ANSWERS = """version: 1
mode: precompiled
driver:
  version: '580.126.09.1'
  repository: {repository}
"""


def test_against_a_cluster_an_image_the_registry_lacks_is_a_finding(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The nodes and the registry of the cluster (the demo's, over HTTPS) are read, as ``apply`` reads them."""
    demo = demo_cluster("sle-micro-precompiled")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    answers = tmp_path / "answers.yaml"
    answers.write_text(DEMO_ANSWERS.format(repository="registry.example.com/mlops"))
    good = tmp_path / "good"
    assert main(["bundle", "--deployer", "argocd", "--answers", str(answers), *kube, "-o", str(good)]) == 0
    _, err = capsys.readouterr()
    assert "images:" in err and not (good / "FINDINGS").exists()
    assert "sle-micro5.5" in (good / "images" / "images.txt").read_text()
    answers.write_text(DEMO_ANSWERS.format(repository="registry.example.com/elsewhere"))
    bad = tmp_path / "bad"
    assert main(["bundle", "--deployer", "helmfile", "--answers", str(answers), *kube, "-o", str(bad)]) == 1
    findings = (bad / "FINDINGS").read_text()
    assert "image not in the registry: registry.example.com/elsewhere/nvidia-driver:580.126.09.1-" in findings
    assert "hint: " in findings and (bad / "helmfile.yaml").exists()


def test_objects_the_server_would_refuse_are_findings() -> None:
    """What the chart creates from the values is the plan's ClusterPolicy (the parity above): an error of it against
    the release's CRD makes Helm's install fail, so the bundle carries it as apply's offline dry-run does."""
    rendered = _rendered("v26.3.3", "operand-registry")
    assert gitops_bundle(rendered, "helm").findings == ()
    rendered.cluster_policy["spec"]["driver"]["rdma"] = {"enabled": "yes"}  # a string where the CRD wants a bool
    bundle = gitops_bundle(rendered, "helm")
    [line] = bundle.findings
    assert line.startswith("the API server would refuse what Helm installs") and "rdma" in line
    assert bundle.files["FINDINGS"] == f"✗ {line}\n" and "FINDINGS" in bundle.files["SHA256SUMS"]
