"""Warnings about the GPU nodes themselves: unplaceable nodes, OSes and architectures without an image, stale NFD labels."""

from __future__ import annotations

from typing import Any

from tests.helpers.hostile.cases_nodes import PRECOMPILED, UPSTREAM_AIRGAPPED, node, sle_node
from tests.helpers.plans import answers_plan
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, images_table, render

DIGEST = "sha256:" + "a" * 64


def _render(plan: Plan | None, *nodes: dict[str, Any]) -> Rendered:
    assert plan is not None
    return render(plan, facts_from_nodelist({"kind": "NodeList", "items": list(nodes)}))


def _codes(rendered: Rendered) -> dict[str, str]:
    return {a.code: a.message for a in rendered.advice}


def test_first_gpu_node_without_os_labels_leaves_every_node_unplaced_under_clusterpolicy() -> None:
    rendered = _render(answers_plan(UPSTREAM_AIRGAPPED), node("gpu-0", os_id=None, os_version=None), node("gpu-1"))
    assert images_table(rendered.node_images) == "gpu-0\t?\ngpu-1\t?\n"
    assert "any GPU node may be that one" in _codes(rendered)["node-unplaced"]
    assert not rendered.mirror


def test_any_gpu_node_without_os_labels_may_be_the_one_the_operator_reads_under_clusterpolicy() -> None:
    """Informer order, not name order (operator issues #2471, #1200): a later node can stop the reconcile too."""
    rendered = _render(answers_plan(UPSTREAM_AIRGAPPED), node("gpu-0"), node("gpu-1", os_id=None, os_version=None))
    assert images_table(rendered.node_images) == "gpu-0\t?\ngpu-1\t?\n"
    unplaced = {i.node: i.unplaced for i in rendered.node_images}
    assert "on gpu-1, whose OS the operator may read for every node" in unplaced["gpu-0"]


def _v26_3(mode: str, **driver: Any) -> Plan:
    driver = {
        "repository": "registry.example.com/mlops",
        "version": "580" if mode == "precompiled" else "580.126.20",
    } | driver
    return Plan.model_validate({"operator": {"version": "v26.3.3"}, "mode": mode, "driver": driver})


def test_a_version_id_the_release_cannot_parse_is_unplaced_with_the_operators_error() -> None:
    """v26.3.3 parses a rhel VERSION_ID's major as a number: 'A.10' is an error there, never '-rhelA.10'."""
    rhel = node("gpu-0", kernel="5.14.0-427.13.1.el9_4.x86_64", os_id="rhel", os_version="A.10")
    for plan in (_v26_3("upstream"), _v26_3("upstream", useNvidiaDriverCRD=True), _v26_3("precompiled")):
        rendered = _render(plan, rhel)
        assert images_table(rendered.node_images) == "gpu-0\t?\n"
        assert "'A.10'" in _codes(rendered)["node-unplaced"]
        assert "A.10" not in "".join(i.image for i in rendered.node_images)


def test_a_node_without_the_kernel_label_gets_no_empty_kernel_tag() -> None:
    rendered = _render(_v26_3("precompiled", useNvidiaDriverCRD=True), node("gpu-0", kernel=None), node("gpu-1"))
    images = {i.node: i.image for i in rendered.node_images}
    assert images["gpu-0"] == "" and images["gpu-1"].endswith(":580-5.15.0-1048-nvidia-ubuntu22.04")
    assert "--" not in "".join(a.message for a in rendered.advice)


def test_under_nvidiadriver_only_the_unlabelled_node_is_unplaced() -> None:
    rendered = _render(
        answers_plan(UPSTREAM_AIRGAPPED, useNvidiaDriverCRD=True),
        node("gpu-0", os_id=None, os_version=None),
        node("gpu-1"),
    )
    images = {i.node: i.image for i in rendered.node_images}
    assert images["gpu-0"] == "" and images["gpu-1"].endswith(":580.126.20-ubuntu22.04")


def test_a_digest_needs_no_os_so_the_node_is_placed() -> None:
    rendered = _render(answers_plan(UPSTREAM_AIRGAPPED, version=DIGEST), node("gpu-0", os_id=None, os_version=None))
    assert rendered.node_images[0].image.endswith(DIGEST)
    assert "node-unplaced" not in _codes(rendered)


def test_nodeinfo_prediction_is_said_to_be_one_and_disappears_with_nfd() -> None:
    before = _render(answers_plan(UPSTREAM_AIRGAPPED), node(kernel=None, os_id=None, os_version=None))
    assert before.node_images[0].image.endswith("-ubuntu22.04")
    assert "predicted-from-nodeinfo" in _codes(before)
    assert "predicted-from-nodeinfo" not in _codes(_render(answers_plan(UPSTREAM_AIRGAPPED), node()))


def test_os_without_driver_image_is_quiet_in_preinstalled_mode() -> None:
    bottlerocket = node(os_id="bottlerocket", os_version="1.20.0")
    assert "os-without-driver-image" in _codes(_render(answers_plan(UPSTREAM_AIRGAPPED), bottlerocket))
    preinstalled = answers_plan(UPSTREAM_AIRGAPPED)
    assert preinstalled is not None
    preinstalled = preinstalled.model_copy(update={"mode": type(preinstalled.mode)("preinstalled")})
    assert "os-without-driver-image" not in _codes(_render(preinstalled, bottlerocket))


def test_architecture_advice_per_mode() -> None:
    arm = node(arch="arm64")
    assert "x86_64 only" in _codes(_render(answers_plan(PRECOMPILED), sle_node(arch="arm64")))["precompiled-amd64-only"]
    upstream = _codes(_render(answers_plan(UPSTREAM_AIRGAPPED), arm))["gpu-node-architecture"]
    assert "docker fallback copies only the platform" in upstream
    ppc = _render(answers_plan(UPSTREAM_AIRGAPPED), node(arch="ppc64le"))
    assert any(a.code == "gpu-node-architecture" and a.level == "warning" for a in ppc.advice)


def test_nfd_disagreeing_with_the_kubelet_is_named_per_node_and_field() -> None:
    rendered = _render(answers_plan(UPSTREAM_AIRGAPPED), node("gpu-0", os_image="Ubuntu 24.04.1 LTS"), node("gpu-1"))
    message = _codes(rendered)["nfd-disagrees"]
    assert "gpu-0 OS: NFD 'ubuntu22.04', nodeInfo 'ubuntu24.04'" in message and "gpu-1" not in message
