"""Node facts: what a NodeList tells about each node's kernel, OS, GPU and driver state, and how GPU nodes group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.render_cases import CP, SLE_KERNEL, node, nodelist
from wizard.engine.facts import (
    LABEL_GPU_PRESENT,
    LABEL_KERNEL,
    LABEL_OS_ID,
    LABEL_OS_VERSION,
    facts_from_nodelist,
    node_facts,
    parse_os_image,
)
from wizard.engine.plan import DEFAULT_TOOLKIT_INSTALL_DIR, IMMUTABLE_TOOLKIT_INSTALL_DIR

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"


def without_labels(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    labels = {k: v for k, v in data["metadata"]["labels"].items() if k not in keys}
    return {**data, "metadata": {**data["metadata"], "labels": labels}}


@pytest.mark.parametrize(
    ("os_image", "expected"),
    [
        ("Ubuntu 22.04.5 LTS", ("ubuntu", "22.04")),
        ("Ubuntu 24.04.2 LTS", ("ubuntu", "24.04")),
        ("SUSE Linux Enterprise Micro 5.5", ("sle-micro", "5.5")),
        ("SUSE Linux Micro 6.1", ("sl-micro", "6.1")),
        ("SUSE Linux Enterprise Server 15 SP6", ("sles", "15.6")),
        ("Red Hat Enterprise Linux CoreOS 418.94.202410090804-0 (Plow)", ("rhcos", "4.18")),
        ("Red Hat Enterprise Linux 9.4 (Plow)", ("rhel", "9.4")),
        ("Rocky Linux 9.4 (Blue Onyx)", ("rocky", "9.4")),
        ("Oracle Linux Server 8.10", ("ol", "8.10")),
        ("CentOS Stream 9", ("centos", "9")),
        ("Debian GNU/Linux 12 (bookworm)", ("debian", "12")),
        ("Flatcar Container Linux by Kinvolk 3975.2.1 (Oklo)", ("flatcar", "3975.2.1")),
        ("Talos (v1.8.0)", ("talos", "1.8")),
        ("Windows Server 2022 Datacenter", None),
    ],
)
def test_parse_os_image(os_image: str, expected: tuple[str, str] | None) -> None:
    assert parse_os_image(os_image) == expected


def test_nfd_labels_win_over_node_info() -> None:
    data = node("gpu-0", "rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64")
    data["status"]["nodeInfo"]["osImage"] = "Ubuntu 22.04.5 LTS"
    data["status"]["nodeInfo"]["kernelVersion"] = "0.0.0"
    facts = node_facts(data)
    assert (facts.os_id, facts.os_version, facts.os_source) == ("rhel", "9.4", "nfd")
    assert (facts.kernel, facts.kernel_source) == ("5.14.0-427.13.1.el9_4.x86_64", "nfd")


def test_without_nfd_the_node_info_is_used_and_recorded() -> None:
    data = without_labels(node("gpu-0", "sle-micro", "5.5", SLE_KERNEL), LABEL_KERNEL, LABEL_OS_ID, LABEL_OS_VERSION)
    facts = node_facts(data)
    assert (facts.os_id, facts.os_version, facts.os_source) == ("sle-micro", "5.5", "nodeInfo")
    assert (facts.kernel, facts.kernel_source) == (SLE_KERNEL, "nodeInfo")
    assert facts.tag_os("v26.7.0") == "sle-micro5.5"
    data["status"]["nodeInfo"]["osImage"] = "Some Unknown OS"
    unknown = node_facts(data)
    assert (unknown.os_id, unknown.os_source, unknown.tag_os("v26.7.0")) == ("", "unknown", "unknown")


def test_gpu_detection() -> None:
    assert node_facts(node("gpu-0")).gpu is True
    assert node_facts(CP).gpu is False
    # before the operator labels gpu.present, NFD's PCI label tells
    assert node_facts(without_labels(node("gpu-0"), LABEL_GPU_PRESENT)).gpu is True
    # the operator's gpu.present=false wins over a stale PCI label
    assert node_facts(node("gpu-0", extra_labels={LABEL_GPU_PRESENT: "false"})).gpu is False


def test_gpu_product_count_and_driver_state() -> None:
    facts = node_facts(
        node("gpu-0", gpu="NVIDIA-L40S", count=4, extra_labels={"nvidia.com/gpu.deploy.driver": "pre-installed"})
    )
    assert (facts.gpu_product, facts.gpu_count) == ("NVIDIA-L40S", 4)
    assert facts.preinstalled and facts.deploy_driver == "pre-installed"
    assert facts.container_runtime == "containerd://1.7.27"
    assert node_facts(node("gpu-1")).preinstalled is False


def test_groups_follow_the_release_os_tag_rule() -> None:
    cluster = facts_from_nodelist(
        nodelist(
            CP,
            node("gpu-0", "rhel", "9.4", "5.14.0-427.el9.x86_64"),
            node("gpu-1", "rhel", "9.6", "5.14.0-427.el9.x86_64"),
            node("gpu-2", "rhel", "9.6", "5.14.0-427.el9.x86_64"),
            node("gpu-3", "ubuntu", "22.04", "5.15.0-1048-nvidia"),
        )
    )
    newest = cluster.groups("v26.7.0")  # rhel keeps only the major: one group
    assert [(g.tag_os, g.kernel, g.count) for g in newest] == [
        ("rhel9", "5.14.0-427.el9.x86_64", 3),
        ("ubuntu22.04", "5.15.0-1048-nvidia", 1),
    ]
    older = cluster.groups("v26.3.3")  # full VERSION_ID below rhel 10: two groups, largest first
    assert [(g.tag_os, g.count) for g in older] == [("rhel9.6", 2), ("rhel9.4", 1), ("ubuntu22.04", 1)]
    assert [n.name for n in older[0].nodes] == ["gpu-1", "gpu-2"]
    assert cluster.os_tags("v25.10.1") == ["rhel9.4", "rhel9.6", "ubuntu22.04"]
    assert cluster.os_tags("v26.7.0") == ["rhel9", "ubuntu22.04"]


def test_group_products_in_first_seen_order() -> None:
    cluster = facts_from_nodelist(
        nodelist(node("gpu-0", gpu="NVIDIA-H200"), node("gpu-1", gpu="NVIDIA-L40S"), node("gpu-2", gpu="NVIDIA-H200"))
    )
    [group] = cluster.groups("v26.7.0")
    assert group.products == ["NVIDIA-H200", "NVIDIA-L40S"]


@pytest.mark.parametrize(
    ("nodes", "mode"),
    [
        ((CP,), "upstream"),
        ((CP, node("gpu-0", extra_labels={"nvidia.com/gpu.deploy.driver": "pre-installed"})), "preinstalled"),
        ((CP, node("gpu-0", "sle-micro", "5.5", SLE_KERNEL)), "precompiled"),
        ((CP, node("gpu-0", "sl-micro", "6.1", "6.4.0-150600.23.25-default")), "precompiled"),
        ((CP, node("gpu-0")), "upstream"),
    ],
)
def test_recommended_mode(nodes: tuple[dict[str, Any], ...], mode: str) -> None:
    recommendation = facts_from_nodelist(nodelist(*nodes)).recommend_mode()
    assert recommendation.value == mode and recommendation.reason


def test_recommended_toolkit_dir() -> None:
    sle = facts_from_nodelist(nodelist(CP, node("gpu-0", "sle-micro", "5.5", SLE_KERNEL)))
    assert sle.recommend_toolkit_dir().value == IMMUTABLE_TOOLKIT_INSTALL_DIR
    ubuntu = facts_from_nodelist(nodelist(CP, node("gpu-0")))
    assert ubuntu.recommend_toolkit_dir().value == DEFAULT_TOOLKIT_INSTALL_DIR
    # a CPU-only immutable node does not move the toolkit of the GPU nodes
    mixed = facts_from_nodelist(nodelist(node("cp-1", "sle-micro", "5.5", SLE_KERNEL, gpu=""), node("gpu-0")))
    assert mixed.recommend_toolkit_dir().value == DEFAULT_TOOLKIT_INSTALL_DIR


def test_nodelist_shapes() -> None:
    assert [n.name for n in facts_from_nodelist(node("gpu-0")).nodes] == ["gpu-0"]
    assert [n.name for n in facts_from_nodelist({"kind": "NodeList", "items": [CP, node("gpu-0")]}).nodes] == [
        "cp-0",
        "gpu-0",
    ]
    with pytest.raises(ValueError, match="not a NodeList"):
        facts_from_nodelist({"kind": "Pod"})


@pytest.mark.parametrize(
    ("name", "gpu_nodes", "tags"),
    [
        ("sle-micro-precompiled", 2, ["sle-micro5.5"]),
        ("ubuntu-upstream-airgapped", 2, ["ubuntu22.04"]),
        ("preinstalled", 2, ["ubuntu22.04"]),
    ],
)
def test_shipped_example_nodelists(name: str, gpu_nodes: int, tags: list[str]) -> None:
    cluster = facts_from_nodelist(json.loads((EXAMPLES / f"{name}.nodes.json").read_text()))
    assert len(cluster.gpu_nodes) == gpu_nodes
    assert cluster.os_tags("v26.7.0") == tags


def test_mig_strategy_and_replicas_are_read_from_gfd_labels() -> None:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-A30-MIG-1g.6gb",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.replicas": "2",
    }
    mig = node_facts(
        {"metadata": {"name": "gpu-a30-01", "labels": labels}, "status": {"capacity": {"nvidia.com/gpu": "8"}}}
    )
    assert (mig.gpu_count, mig.mig_strategy, mig.gpu_replicas) == (8, "single", 2)
    plain = node_facts({"metadata": {"name": "gpu-0", "labels": {"nvidia.com/gpu.replicas": "0"}}})
    assert (plain.mig_strategy, plain.gpu_replicas) == ("", 1)
