"""Every image of a release (issue 39, item 2): release.yaml ``images`` against the chart and the operator's own list,
and an air-gapped plan that names no image outside its private registry.

The oracles: each release's chart (``shared/operator-charts/<release>``: its ``values.yaml`` and the NFD subchart's)
and, for v26.7.0, the operator's own image list — the file its release workflow publishes
(``.github/workflows/release-image-list.yaml`` runs ``.github/scripts/generate-image-list.py`` on the tag), produced
here by that script from the tag in ``shared/operator-git`` without registry lookups (``--skip-registry``: the
driver at its chart version, as gpu-wizard lists it). Without the oracles the tests skip, under ``CI=true`` they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.chart_parity import CHARTS, PRIVATE_REGISTRY, RELEASES, rendered_case
from wizard.engine import releases
from wizard.engine.facts import ClusterFacts
from wizard.engine.operand_images import live_operand_registry, operator_registry, private_repository, release_images
from wizard.engine.plan import Plan
from wizard.engine.render import helm_yaml, mirror_script, render, to_yaml

OPERATOR_GIT = Path(
    os.environ.get("GPU_WIZARD_OPERATOR_GIT_MIRROR")
    or Path(__file__).resolve().parents[2] / "shared" / "operator-git" / "gpu-operator.git"
)
#: The release whose tag publishes its own image list.
LISTED_RELEASE = "v26.7.0"


def _need(path: Path, what: str) -> None:
    if path.exists():
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} missing at {path}")
    pytest.skip(f"{what} not at {path}")


def _chart_values(release: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    chart = CHARTS / release
    _need(chart / "values.yaml", "the operator's chart")
    nfd = chart / "charts" / "node-feature-discovery"
    load = lambda p: yaml.safe_load(p.read_text(encoding="utf-8"))  # noqa: E731
    return load(chart / "values.yaml"), load(nfd / "values.yaml"), load(nfd / "Chart.yaml")


def _images_in(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping of the chart's values naming an image (``repository`` and ``image`` set), by dotted path."""
    if isinstance(values, dict):
        if values.get("repository") and values.get("image"):
            yield ".".join(path), values
        for key, value in values.items():
            yield from _images_in(value, (*path, str(key)))


@pytest.mark.parametrize("release", RELEASES)
def test_release_images_are_the_charts(release: str) -> None:
    """Each entry of release.yaml ``images`` is the chart's repository/image/version at its place, and every image
    the chart's values name has an entry (the operator's and validator's version is the chart's appVersion)."""
    values, nfd_values, nfd_chart = _chart_values(release)
    entries = releases.rules(release).images
    chart = dict(_images_in(values))
    for entry in entries:
        if entry.values == "node-feature-discovery.image":
            repository, _, image = nfd_values["image"]["repository"].rpartition("/")
            version = nfd_values["image"].get("tag") or nfd_chart["appVersion"]
            assert (entry.repository, entry.image, entry.version) == (repository, image, version), entry
            continue
        section = chart.get(entry.values)
        assert section is not None, f"{release}: {entry.values} names no image in the chart"
        expected = (section["repository"], section["image"], str(section.get("version") or release))
        assert (entry.repository, entry.image, entry.version) == expected, entry
    assert sorted(chart) == sorted(e.values for e in entries if e.values in chart), "a chart image without an entry"
    assert set(chart) <= {e.values for e in entries}


def _operator_list(tmp_path: Path) -> list[str]:
    """The operator's own image list for v26.7.0, by its own script at the tag (no registry lookups)."""
    _need(OPERATOR_GIT / "packed-refs", "the operator's git mirror")
    if shutil.which("git") is None:
        pytest.skip("no git")
    git_dir = tmp_path / "gpu-operator.git"
    shutil.copytree(OPERATOR_GIT, git_dir)  # read-only and without refs/: git needs its own copy
    for path in [git_dir, *git_dir.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    (git_dir / "refs").mkdir(exist_ok=True)
    script = tmp_path / "generate-image-list.py"
    shown = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{LISTED_RELEASE}:.github/scripts/generate-image-list.py"],
        capture_output=True,
        check=True,
    )
    script.write_bytes(shown.stdout)
    chart = CHARTS / LISTED_RELEASE
    nfd = chart / "charts" / "node-feature-discovery"
    argv = [sys.executable, str(script), "--skip-registry", "--gpu-operator-version", LISTED_RELEASE]
    argv += ["--values", str(chart / "values.yaml"), "--chart", str(chart / "Chart.yaml")]
    argv += ["--nfd-values", str(nfd / "values.yaml"), "--nfd-chart", str(nfd / "Chart.yaml")]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
    return [line for line in out.splitlines() if line]


def test_the_image_list_is_the_operators_own_for_v26_7_0(tmp_path: Path) -> None:
    _need(CHARTS / LISTED_RELEASE, "the operator's chart")
    listed = _operator_list(tmp_path)
    assert len(listed) == 16
    assert release_images(LISTED_RELEASE) == listed


PRIVATE = PRIVATE_REGISTRY + "/"


@pytest.mark.parametrize("case", ["operand-registry", "operand-registry-nvidiadriver"])
@pytest.mark.parametrize("release", RELEASES)
def test_an_air_gapped_plan_names_no_image_outside_its_registry(release: str, case: str) -> None:
    """The ClusterPolicy, the NVIDIADrivers, the Helm values and the mirror plan's targets all name the private
    registry only (the chart's own rendering of these values is held to the same policy by test_chart_parity)."""
    rendered, values = rendered_case(release, case)
    docs = yaml.safe_load_all(to_yaml(rendered.documents()))

    def repositories(tree: Any) -> Iterator[str]:
        if isinstance(tree, dict):
            for key, value in tree.items():
                if key == "repository" and isinstance(value, str) and value:
                    yield value
                yield from repositories(value)
        elif isinstance(tree, list):
            for item in tree:
                yield from repositories(item)

    named = [*(r for doc in docs for r in repositories(doc)), *repositories(values)]
    assert named and all(r.startswith(PRIVATE) for r in named), sorted(set(named))
    assert "nvcr.io" not in to_yaml(rendered.documents()) + helm_yaml(rendered)
    assert rendered.images and all(image.startswith(PRIVATE) for image in rendered.images), rendered.images
    components = {c for image in rendered.operand_images for c in image.components}
    assert {
        "driver-manager",
        "toolkit",
        "device-plugin",
        "validator",
        "gfd",
        "dcgm-exporter",
        "mig-manager",
    } <= components
    assert "nfd" in components
    assert {item.target for item in rendered.mirror} >= {image.reference for image in rendered.operand_images}
    script = mirror_script(rendered.mirror)
    assert "docker://nvcr.io/nvidia/k8s/container-toolkit:" in script
    assert "docker://registry.k8s.io/nfd/node-feature-discovery:" in script


def test_without_a_private_registry_the_charts_images_stand() -> None:
    rendered, values = rendered_case(LISTED_RELEASE, "upstream")
    toolkit = next(i for i in rendered.operand_images if "toolkit" in i.components)
    assert toolkit.reference == toolkit.source == "nvcr.io/nvidia/k8s/container-toolkit:v1.20.0"
    assert not [item for item in rendered.mirror if item.components]
    assert "toolkit" not in values


def test_disabled_components_are_not_pulled() -> None:
    """DCGM, GDS, GDRCopy, the node status exporter, the sandbox operands and the DRA driver are off in the chart."""
    rendered, _ = rendered_case(LISTED_RELEASE, "operand-registry")
    components = {c for image in rendered.operand_images for c in image.components}
    off = {"dcgm", "gds", "gdrcopy", "node-status-exporter", "vfio-manager", "cc-manager", "dra-driver"}
    assert not components & off
    preinstalled = render(
        Plan.model_validate({"mode": "preinstalled", "driver": {"operandRegistry": PRIVATE_REGISTRY}}), ClusterFacts([])
    )
    assert "driver-manager" not in {c for image in preinstalled.operand_images for c in image.components}


def test_private_repository_keeps_the_path_below_the_host() -> None:
    assert private_repository("nvcr.io/nvidia/k8s", "harbor.corp.example") == "harbor.corp.example/nvidia/k8s"
    assert private_repository("registry.k8s.io/nfd", "harbor.corp.example/mirror") == "harbor.corp.example/mirror/nfd"
    assert private_repository("nvcr.io/nvidia", "") == "nvcr.io/nvidia"


def test_the_running_operators_registry_is_read_from_its_image() -> None:
    release = releases.default_release()
    assert operator_registry(f"harbor.corp.example/nvidia/gpu-operator:{release}", release) == "harbor.corp.example"
    assert operator_registry(f"harbor.corp.example:8443/proj/nvidia/gpu-operator:{release}", release) == (
        "harbor.corp.example:8443/proj"
    )
    assert operator_registry(f"nvcr.io/nvidia/gpu-operator:{release}", release) == ""
    assert operator_registry(f"harbor.corp.example/gpu-operator:{release}", release) == ""


def test_a_registry_without_a_host_is_refused() -> None:
    with pytest.raises(ValueError, match="operandRegistry"):
        Plan.model_validate({"mode": "preinstalled", "driver": {"operandRegistry": "nvidia"}})


def test_a_plan_read_back_from_a_live_policy_keeps_its_registry() -> None:
    """An upgrade starts from the live policy's answers: its operands stay in the private registry."""
    from wizard.cluster.core.liveplan import plan_from_live

    mapped, _ = rendered_case(LISTED_RELEASE, "operand-registry")
    assert live_operand_registry(mapped.cluster_policy["spec"], LISTED_RELEASE) == PRIVATE_REGISTRY
    plan = plan_from_live(mapped.cluster_policy, [], release=LISTED_RELEASE, namespace="gpu-operator")
    assert plan.driver.operandRegistry == PRIVATE_REGISTRY
    public, _ = rendered_case(LISTED_RELEASE, "upstream")
    assert live_operand_registry(public.cluster_policy["spec"], LISTED_RELEASE) == ""
