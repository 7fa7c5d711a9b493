"""The Argo CD Application and the Flux HelmRepository, OCIRepository, HelmRelease and Kustomizations of a bundle, checked against the
projects' real CRDs (pinned under tests/gitops_crds, see its README) by the demo API server's structural-schema
check: every field declared (nothing pruned), types, enums, patterns and required fields as the API server checks
them. The lane's real API server dry-runs the same manifests (tests/realcluster/test_gitops_bundle_real.py).
"""

from __future__ import annotations

import pytest

from tests.helpers.chart_parity import RELEASES
from tests.helpers.gitops import PLANS, crd_schemas, gitops_manifests
from wizard.demo.api.schema import check_object


def test_the_pinned_crds_are_the_ones_the_bundles_use() -> None:
    assert set(crd_schemas()) >= {
        ("argoproj.io/v1alpha1", "Application"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    }


@pytest.mark.parametrize("chart", [None, "oci://harbor.corp.example/charts/gpu-operator"])
@pytest.mark.parametrize("case", PLANS)
@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]])  # free-form values; v25.10's extra CRs
def test_every_manifest_matches_its_crd(release: str, case: str, chart: str | None) -> None:
    schemas = crd_schemas()
    checked = 0
    for doc in gitops_manifests(release, case, chart):
        if doc["kind"] == "Namespace":
            continue
        report = check_object(doc, schemas[(doc["apiVersion"], doc["kind"])])
        assert not report.unknown and not report.causes, (doc["kind"], report.unknown, report.causes)
        checked += 1
    extra = release == RELEASES[0] and case == "nvidiadriver-precompiled"  # two Flux Kustomizations: CRs after CRDs
    assert checked == 3 + 2 * extra


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
