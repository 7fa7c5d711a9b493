"""The Argo CD Application and the Flux HelmRepository, OCIRepository and HelmRelease of a bundle, checked against the
projects' real CRDs (pinned under tests/gitops_crds, see its README) by the demo API server's structural-schema
check: every field declared (nothing pruned), types, enums, patterns and required fields as the API server checks
them. The lane's real API server dry-runs the same manifests (tests/realcluster/test_gitops_bundle_real.py).
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.chart_parity import CASE_NODES, CASES, NODES, RELEASES
from tests.helpers.render_cases import facts
from tests.helpers.yaml11 import yaml11_load_all
from wizard.demo.api.schema import check_object
from wizard.engine.gitops import gitops_bundle
from wizard.engine.operator_install import chart_source, operator_install
from wizard.engine.plan import Plan
from wizard.engine.render import render

CRDS = Path(__file__).parent / "gitops_crds"
PLANS = ("precompiled-rke2", "operand-registry", "preinstalled", "operand-registry-nvidiadriver", "upstream-repoconfig")


@functools.cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in yaml11_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                if version.get("served"):
                    schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every served version of the pinned CRDs (parsed once)."""
    return copy.deepcopy(_crd_schemas())


def gitops_manifests(release: str, case: str, chart: str | None = None) -> list[dict[str, Any]]:
    """The Argo CD and Flux objects of one plan's bundles."""
    answers = {"operator": {"version": release}, **CASES[case]}
    rendered = render(Plan.model_validate(answers), facts(*CASE_NODES.get(case, NODES)))
    install = operator_install(rendered, chart_source(release, chart))
    docs: list[dict[str, Any]] = []
    for deployer, name in (("argocd", "application.yaml"), ("flux", "helmrelease.yaml")):
        docs += [d for d in yaml11_load_all(gitops_bundle(rendered, deployer, install=install).files[name]) if d]
    return docs


def test_the_pinned_crds_are_the_ones_the_bundles_use() -> None:
    assert set(crd_schemas()) >= {
        ("argoproj.io/v1alpha1", "Application"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
    }


@pytest.mark.parametrize("chart", [None, "oci://harbor.corp.example/charts/gpu-operator"])
@pytest.mark.parametrize("case", PLANS)
@pytest.mark.parametrize("release", RELEASES[-1:])  # the values are free-form there: one release
def test_every_manifest_matches_its_crd(release: str, case: str, chart: str | None) -> None:
    schemas = _crd_schemas()
    checked = 0
    for doc in gitops_manifests(release, case, chart):
        if doc["kind"] == "Namespace":
            continue
        report = check_object(doc, schemas[(doc["apiVersion"], doc["kind"])])
        assert not report.unknown and not report.causes, (doc["kind"], report.unknown, report.causes)
        checked += 1
    assert checked == 3


def test_the_check_catches_a_wrong_field() -> None:
    """The check is no rubber stamp: a misspelt sync option list and an unknown CRD policy are caught."""
    schemas = crd_schemas()
    app, _, source, release = gitops_manifests("v26.3.3", "preinstalled")
    app["spec"]["syncPolicy"]["syncOption"] = app["spec"]["syncPolicy"].pop("syncOptions")
    assert check_object(app, schemas[("argoproj.io/v1alpha1", "Application")]).unknown
    release["spec"]["install"]["crds"] = "Replace"
    assert check_object(release, schemas[("helm.toolkit.fluxcd.io/v2", "HelmRelease")]).causes
    del source["spec"]["url"]
    assert check_object(source, schemas[("source.toolkit.fluxcd.io/v1", "HelmRepository")]).causes
