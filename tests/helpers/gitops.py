"""The GitOps bundles' Argo CD and Flux objects and the projects' real CRDs pinned under tests/gitops_crds (see its
README), shared by the offline schema check and the lane's server dry-run."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

from tests.helpers.chart_parity import CASE_NODES, CASES, NODES
from tests.helpers.render_cases import facts
from tests.helpers.yaml11 import yaml11_load_all
from wizard.engine.gitops import gitops_bundle
from wizard.engine.operator_install import chart_source, operator_install
from wizard.engine.plan import Plan
from wizard.engine.render import render

CRDS = Path(__file__).resolve().parent.parent / "gitops_crds"
FLUX_KUSTOMIZATIONS = "flux-kustomizations.yaml"
PLANS = (
    "precompiled-rke2",
    "operand-registry",
    "preinstalled",
    "operand-registry-nvidiadriver",
    "upstream-repoconfig",
    "nvidiadriver-precompiled",
)


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
    for deployer, names in (("argocd", ("application.yaml",)), ("flux", ("helmrelease.yaml", FLUX_KUSTOMIZATIONS))):
        files = gitops_bundle(rendered, deployer, install=install).files
        docs += [d for name in names for d in yaml11_load_all(files.get(name, "")) if d]
    return docs
