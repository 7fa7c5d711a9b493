"""GitOps bundles (issue 36 item 1) against the lane's real API server.

The Argo CD and Flux CRDs pinned under ``tests/gitops_crds`` are created in the real kube-apiserver and every
Application, HelmRepository, OCIRepository and HelmRelease of the hidden-style plans' bundles is created there
with a server-side dry-run and strict field validation (the real structural schema, its CEL rules, pruning);
a manifest with a wrong field is refused. The ``helm`` bundle is written by ``gpu-wizard bundle`` from the
cluster's own nodes; its deploy script is never run: its one ``helm`` line, split with shlex, is the argv the
engine builds, and the engine's argv runs the real helm (the plan's finding overridden: one
node of two has no image), which installs the real chart with the bundle's values
(CRDs first, then the ClusterPolicy the plan renders); with the lane's helm on PATH the bundle first renders its
values through the local chart (``helm template``) and says so in its README. Flux's Kustomizations (the extra
NVIDIADriver CRs after the HelmRelease) are dry-run beside the rest, against the pinned kustomize-controller CRD.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.helpers.chart_parity import _chart_dir
from tests.helpers.gitops import CRDS, PLANS, gitops_manifests
from tests.helpers.yaml11 import yaml11_load_all
from tests.realcluster.cluster import RealCluster
from wizard.cli.main import build_parser, main
from wizard.cli.session import facts_for, run_interruptibly
from wizard.cluster.facade import check_chart
from wizard.engine.answers import load_answers, plan_for_nodes
from wizard.engine.gitops import gitops_bundle
from wizard.engine.operator_install import chart_source, operator_install
from wizard.engine.render import render

ARGOCD_NAMESPACE = "argocd"


def _dry_run(cluster: RealCluster, doc: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(cluster.bin / "kubectl"), f"--kubeconfig={cluster.kubeconfig('admin')}", "create",
            "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-",
        ],
        input=json.dumps(doc), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_every_manifest_is_accepted_by_the_real_api_server_with_the_real_crds(bare_cluster: RealCluster) -> None:
    cluster = bare_cluster
    crds = sorted(CRDS.glob("*.yaml"))
    cluster.kubectl("apply", "--server-side", *[f"-f={c}" for c in crds])
    cluster.wait_established(
        "crd/applications.argoproj.io", "crd/helmreleases.helm.toolkit.fluxcd.io",
        "crd/helmrepositories.source.toolkit.fluxcd.io", "crd/ocirepositories.source.toolkit.fluxcd.io",
        "crd/kustomizations.kustomize.toolkit.fluxcd.io",
    )  # fmt: skip
    for name in (ARGOCD_NAMESPACE, "gpu-operator", "flux-system"):
        cluster.kubectl("create", "namespace", name, check=False)
    accepted: list[str] = []
    expected = 0
    for case in PLANS:
        for chart in (None, "oci://harbor.corp.example/charts/gpu-operator"):
            for doc in gitops_manifests(cluster.release, case, chart):
                if doc["kind"] == "Namespace":
                    continue
                expected += 1
                proc = _dry_run(cluster, doc)
                assert proc.returncode == 0 and not proc.stderr.strip(), (case, chart, doc["kind"], proc.stderr)
                accepted.append(proc.stdout.strip())
    assert len(accepted) == expected >= len(PLANS) * 2 * 3
    # the v25.10 and v26.3 charts write branch 580 unquoted: Flux applies CR default in a Kustomization of its own
    kustomizations = [name for name in accepted if name.startswith("kustomization.kustomize.toolkit.fluxcd.io/")]
    assert len(kustomizations) == (4 if cluster.release in ("v25.10.1", "v26.3.3") else 0), accepted
    # the real server is no rubber stamp: a CRD policy Flux does not know, a misspelt sync option field
    app, _, source, release = gitops_manifests(cluster.release, "preinstalled")
    release["spec"]["install"]["crds"] = "Replace"  # type: ignore[index]
    assert "Unsupported value" in _dry_run(cluster, release).stderr
    app["spec"]["syncPolicy"]["syncOption"] = app["spec"]["syncPolicy"].pop("syncOptions")  # type: ignore[index]
    assert 'unknown field "spec.syncPolicy.syncOption"' in _dry_run(cluster, app).stderr
    del source["spec"]["url"]  # type: ignore[attr-defined]
    assert _dry_run(cluster, source).returncode != 0


def test_the_helm_bundles_command_installs_the_chart_with_its_values(
    bare_cluster: RealCluster,
    helm_binary: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = bare_cluster
    release = cluster.release
    chart = str(_chart_dir(release))  # the lane reaches no chart repository: the local chart, as --chart names it
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\noperator: {{version: {release}}}\nmode: precompiled\n"
        "driver: {version: 580.126.09.1, repository: registry.example.com/mlops}\n"
    )
    out = tmp_path / "bundle"
    admin = str(cluster.kubeconfig("admin"))
    argv = ["bundle", "--deployer", "helm", "--answers", str(answers), "--chart", chart, "-o", str(out)]
    bin_dir = tmp_path / "bin"  # the lane's helm on PATH: the bundle renders the values through the local chart
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binary)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code = main([*argv, "--kubeconfig", admin, "--no-registry"])  # the nodes from the real API server
    _, err = capsys.readouterr()
    assert (
        "! chart:" not in err
        and f"(helm template of chart {chart}): the chart accepted them" in (out / "README.md").read_text()
    )
    # the lane's second kernel has no published precompiled image: the bundle carries Preview's finding, exit 1
    assert code == 1, err
    assert "kernel 5.14.21-150500.55.171-default" in (out / "FINDINGS").read_text()
    # the script is never run: its one helm line is read as data and compared with the engine's argv
    lines = [line for line in (out / "deploy.sh").read_text().splitlines() if line.startswith("helm ")]
    [line] = lines
    plan, _ = load_answers(str(answers), nodes_later=True)
    args = build_parser().parse_args(["render", "--answers", str(answers), "--kubeconfig", admin])
    facts = run_interruptibly(facts_for(args))
    rendered = render(plan_for_nodes(plan, facts, str(answers)), facts)
    install = operator_install(rendered, chart_source(release, chart))
    engine_argv = install.helm_argv("values.yaml")
    assert shlex.split(line) == engine_argv
    assert (out / "values.yaml").read_text() == install.values_text
    checked = asyncio.run(check_chart(install, str(helm_binary)))
    assert checked.ran and not checked.findings, checked
    assert gitops_bundle(rendered, "helm", install=install, chart=checked).files == {
        str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file()
    }
    engine_argv[0] = str(helm_binary)
    env = {**os.environ, "HOME": str(tmp_path / "home"), "KUBECONFIG": admin, "HELM_NO_PLUGINS": "1"}
    proc = subprocess.run(engine_argv, cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    policy = json.loads(cluster.kubectl("get", "clusterpolicies.nvidia.com", "cluster-policy", "-o", "json").stdout)
    assert policy["metadata"]["annotations"]["meta.helm.sh/release-name"] == "gpu-operator"
    driver = policy["spec"]["driver"]
    for key in ("enabled", "usePrecompiled", "repository", "image", "version"):
        assert driver.get(key) == rendered.cluster_policy["spec"]["driver"].get(key), key
    assert driver["repository"] == "registry.example.com/mlops" and driver["usePrecompiled"] is True


def test_the_nvidiadriver_crs_beside_the_release_are_accepted(
    bare_cluster: RealCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """After the chart's install (the test above: its CRDs are there), the NVIDIADriver CRs a bundle carries beside
    the release (a branch the v25.10/v26.3 charts write unquoted) pass the server's dry-run: the deploy script's
    kubectl line (read as data, run with the lane's kubectl and ``--dry-run=server``), Argo CD's annotated copy (a
    file for v25.10, the chart's ``extraObjects`` from v26.3) and Flux's ``drivers/`` Kustomization's file."""
    cluster = bare_cluster
    cluster.wait_established("crd/nvidiadrivers.nvidia.com")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        f"version: 1\noperator: {{version: {cluster.release}}}\nmode: precompiled\n"
        "driver: {version: '580', repository: registry.example.com/mlops, useNvidiaDriverCRD: true}\n"
    )
    admin = str(cluster.kubeconfig("admin"))
    written = 0
    for deployer in ("helm", "argocd", "flux"):
        out = tmp_path / deployer
        argv = ["bundle", "--deployer", deployer, "--answers", str(answers), "-o", str(out)]
        main([*argv, "--kubeconfig", admin, "--no-registry", "--allow-findings"])
        capsys.readouterr()
        crs = out / ("drivers/nvidiadrivers.yaml" if deployer == "flux" else "nvidiadrivers.yaml")
        if deployer == "argocd" and not crs.exists():  # v26.3 on: in the chart's extraObjects, one sync
            [app] = yaml11_load_all((out / "application.yaml").read_text())
            extra = app["spec"]["source"]["helm"]["valuesObject"].get("extraObjects") or []
            if extra:
                crs.write_text("".join(f"---\n{json.dumps(doc)}\n" for doc in extra))
        if not crs.exists():
            assert cluster.release not in ("v25.10.1", "v26.3.3")  # the chart deploys CR default itself
            continue
        written += 1
        kubectl = ["kubectl", "apply", "--server-side", "-f", str(crs.relative_to(out))]
        if deployer == "helm":
            [line] = [x for x in (out / "deploy.sh").read_text().splitlines() if x.startswith("kubectl ")]
            assert shlex.split(line) == kubectl
        run = [str(cluster.bin / "kubectl"), f"--kubeconfig={admin}", *kubectl[1:], "--dry-run=server"]
        proc = subprocess.run(run, cwd=out, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "nvidiadriver.nvidia.com/default" in proc.stdout, proc.stderr
    assert written == (3 if cluster.release in ("v25.10.1", "v26.3.3") else 0)
