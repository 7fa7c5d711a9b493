"""Installing the operator (day 0): the chart, rendered with the install's values file, is the oracle.

The values file ``gpu-wizard apply --install-operator`` hands ``helm upgrade --install`` must make the
chart's first ClusterPolicy the plan's (never the chart's default driver), the chart's Deployment must run
the image the confirmation names, and the argv must be the exact, quoted ``helm`` command.
"""

from __future__ import annotations

import functools
import json
import shlex
from typing import Any

import pytest

from tests.helpers.chart_parity import CASES, NODES, RELEASES, _chart_dir
from tests.helpers.render_cases import facts
from tests.helpers.yaml11 import yaml11_load_all
from wizard.engine.operator_install import ChartSource, chart_source, operator_install
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, render

MODES = ("precompiled", "upstream", "preinstalled", "nvidiadriver")
DRIVER_KEYS = ("enabled", "usePrecompiled", "repository", "image", "version", "useNvidiaDriverCRD")


def _rendered(release: str, case: str) -> Rendered:
    return render(Plan.model_validate({"operator": {"version": release}, **CASES[case]}), facts(*NODES))


@functools.cache
def _chart_objects(release: str, values_text: str) -> tuple[dict[str, Any], ...]:
    """Every object the release's chart renders for a values file (read back as Helm reads it)."""
    from helm_python.chart import Chart

    [values] = yaml11_load_all(values_text)
    with Chart.load(str(_chart_dir(release))) as chart:
        files = chart.render(values=values, name="gpu-operator", namespace="gpu-operator", is_install=True)
    return tuple(d for text in files.values() for d in yaml11_load_all(text) if d)


@pytest.mark.parametrize("case", MODES)
@pytest.mark.parametrize("release", RELEASES)
def test_the_charts_first_cluster_policy_is_the_plans(release: str, case: str) -> None:
    pytest.importorskip("helm_python.chart")
    rendered = _rendered(release, case)
    install = operator_install(rendered)
    objects = _chart_objects(release, install.values_text)
    [policy] = [d for d in objects if d["kind"] == "ClusterPolicy"]
    chart_driver = policy["spec"]["driver"]
    ours = rendered.cluster_policy["spec"]["driver"]
    for key in DRIVER_KEYS:
        if key in ours and (key in chart_driver or ours[key] not in ("", False, None)):
            assert chart_driver.get(key) == ours[key], (release, case, key)
    # the default the issue is about: the chart alone would start NVIDIA's upstream driver
    if case == "preinstalled":
        assert chart_driver["enabled"] is False
    elif case == "nvidiadriver":  # the chart deploys CR default, or the wizard applies every CR after it
        crs = [d for d in objects if d["kind"] == "NVIDIADriver"] + list(yaml11_load_all(install.drivers_text))
        assert {d["metadata"]["name"] for d in crs} == {d["metadata"]["name"] for d in rendered.nvidia_drivers}
        assert {d["spec"]["repository"] for d in crs} == {"registry.example.com/nvidia"}
    else:
        assert chart_driver["repository"] == "registry.example.com/nvidia"
    assert policy["spec"]["toolkit"]["installDir"] == rendered.toolkit_install_dir
    [deployment] = [d for d in objects if d["kind"] == "Deployment" and d["metadata"]["name"] == "gpu-operator"]
    [container] = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "gpu-operator"]
    assert container["image"] == install.images[0] == f"nvcr.io/nvidia/gpu-operator:{release}"
    assert set(install.images) == {install.images[0], *rendered.images}  # every image the cluster pulls, operands too
    assert len(set(install.images)) == len(install.images)
    assert {n.image for n in rendered.node_images if n.image} <= set(install.images)


@pytest.mark.parametrize("release", RELEASES)
def test_an_air_gapped_install_pulls_every_image_from_the_private_registry(release: str) -> None:
    """The chart's Deployment, its ClusterPolicy's operands and NFD all come from ``driver.operandRegistry``."""
    pytest.importorskip("helm_python.chart")
    case = {**CASES["upstream"], "driver": {**CASES["upstream"]["driver"], "operandRegistry": "harbor.corp.example"}}
    rendered = render(Plan.model_validate({"operator": {"version": release}, **case}), facts(*NODES))
    install = operator_install(rendered)
    outside = [
        image for image in install.images if not image.startswith(("harbor.corp.example/", "registry.example.com/"))
    ]
    assert not outside, outside
    objects = _chart_objects(release, install.values_text)
    pulled = {
        c["image"]
        for d in objects
        if d["kind"] in ("Deployment", "DaemonSet")
        for c in [
            *d["spec"]["template"]["spec"].get("initContainers", []),
            *d["spec"]["template"]["spec"]["containers"],
        ]
    }
    assert pulled and all(i.startswith("harbor.corp.example/") for i in pulled), sorted(pulled)
    [policy] = [d for d in objects if d["kind"] == "ClusterPolicy"]
    named = [v for v in json.dumps(policy["spec"]).split('"') if "nvcr.io" in v or "registry.k8s.io" in v]
    assert not named, named


def test_the_command_is_helm_upgrade_install_from_the_release_datas_repository() -> None:
    install = operator_install(_rendered("v26.3.3", "precompiled"))
    argv = install.helm_argv("/tmp/my values.yaml", ("--kube-context", "prod"))
    assert argv == [
        "helm",
        "upgrade",
        "--install",
        "gpu-operator",
        "gpu-operator",
        "--repo",
        "https://helm.ngc.nvidia.com/nvidia",
        "--version",
        "v26.3.3",
        "--namespace",
        "gpu-operator",
        "--create-namespace",
        "--values",
        "/tmp/my values.yaml",
        "--kube-context",
        "prod",
    ]
    assert "--wait" not in argv
    assert shlex.split(install.command("/tmp/my values.yaml")) == argv[:-2]
    assert "'/tmp/my values.yaml'" in install.command("/tmp/my values.yaml")
    summary = "\n".join(install.summary())
    assert "Helm release gpu-operator in namespace gpu-operator" in summary
    assert "nvcr.io/nvidia/gpu-operator:v26.3.3" in summary


def test_a_chart_the_user_names() -> None:
    assert chart_source("v26.3.3", "./charts/gpu-operator") == ChartSource("./charts/gpu-operator")
    assert chart_source("v26.3.3", "oci://harbor.corp.example/nvidia/gpu-operator").argv() == [
        "oci://harbor.corp.example/nvidia/gpu-operator",
        "--version",
        "v26.3.3",
    ]
    assert chart_source("v26.3.3", "oci://harbor.corp.example/nvidia/gpu-operator:v26.3.3").version == ""
    for bad in ("https://example.com/chart.tgz", "oci://", "a b", "$(reboot)", "x;y"):
        with pytest.raises(ValueError, match="--chart"):
            chart_source("v26.3.3", bad)


def test_the_values_file_reads_back_as_the_values() -> None:
    install = operator_install(_rendered("v26.7.0", "upstream"))
    [values] = yaml11_load_all(install.values_text)
    assert json.loads(json.dumps(values)) == json.loads(json.dumps(install.values))
    assert install.values_text.startswith("# gpu-wizard: values that install GPU Operator v26.7.0")
