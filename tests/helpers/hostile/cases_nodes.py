"""Hostile node facts for the catalogue: NodeLists whose names, kernels and OS labels try to escape.

Each case renders a NodeList with ``render -o mirror|yaml|images``. Node facts that break
Kubernetes' grammars (node names, label keys and values, the kernel the kubelet reports) or give an
invalid image tag end with exit 2 and one line naming node, field and what is valid; facts that are
only free text (``osImage``) render with exit 0, and ``stdout_lacks`` proves the injected command
never reaches a line of its own. Nodes the operator cannot place, unsupported OSes, non-amd64 GPU
nodes and NFD labels that disagree with the kubelet render with a warning on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.hostile.case import HostileCase

EXAMPLES = Path(__file__).resolve().parents[3] / "assets" / "examples"
PRECOMPILED = (EXAMPLES / "sle-micro-precompiled.answers.yaml").read_text()
UPSTREAM_AIRGAPPED = (EXAMPLES / "ubuntu-upstream-airgapped.answers.yaml").read_text()

NFD = "feature.node.kubernetes.io"
KERNEL, OS_ID, OS_VERSION = (
    f"{NFD}/kernel-version.full",
    f"{NFD}/system-os_release.ID",
    f"{NFD}/system-os_release.VERSION_ID",
)
INJECTED = "touch /tmp/gpu-wizard-pwned"
"""The command every case tries to smuggle onto a line of its own."""

NAME_RULE = "metadata.name is not a DNS-1123 subdomain"
LABEL_RULE = "is not a label value"


def node(
    name: str = "gpu-0",
    *,
    kernel: str | None = "5.15.0-1048-nvidia",
    os_id: str | None = "ubuntu",
    os_version: str | None = "22.04",
    info_kernel: str = "5.15.0-1048-nvidia",
    os_image: str = "Ubuntu 22.04.4 LTS",
    arch: str = "amd64",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A GPU node as ``kubectl get nodes -o json`` prints it; ``None`` leaves that NFD label out."""
    all_labels = {"kubernetes.io/arch": arch, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L40S"}
    for key, value in ((KERNEL, kernel), (OS_ID, os_id), (OS_VERSION, os_version)):
        if value is not None:
            all_labels[key] = value
    all_labels.update(labels or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "status": {"nodeInfo": {"kernelVersion": info_kernel, "osImage": os_image, "architecture": arch}},
    }


def _with_info(raw: dict[str, Any], **info: str) -> dict[str, Any]:
    """The node with more ``status.nodeInfo`` fields (kubeletVersion, containerRuntimeVersion)."""
    raw["status"]["nodeInfo"].update(info)
    return raw


def sle_node(name: str = "gpu-0", **overrides: Any) -> dict[str, Any]:
    """A SLE Micro 5.5 GPU node, for the precompiled answers."""
    kernel = "5.14.21-150500.55.166-default"
    values = {"kernel": kernel, "os_id": "sle-micro", "os_version": "5.5", "info_kernel": kernel}
    values["os_image"] = "SUSE Linux Enterprise Micro 5.5"
    return node(name, **{**values, **overrides})


def _case(
    name: str,
    nodes: list[dict[str, Any]],
    output: str,
    expect_exit: int,
    *,
    answers: str = UPSTREAM_AIRGAPPED,
    stderr_has: tuple[str, ...] = (),
    stdout_has: tuple[str, ...] = (),
    stdout_lacks: tuple[str, ...] = (),
) -> HostileCase:
    nodelist = json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes})
    return HostileCase(
        name=f"nodes: {name}",
        argv=("render", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json", "-o", output),
        expect_exit=expect_exit,
        files={"answers.yaml": answers, "nodes.json": nodelist},
        stderr_has=stderr_has,
        stdout_has=stdout_has,
        stdout_lacks=(f"\n{INJECTED}", *stdout_lacks),
    )


def _refused(
    name: str, nodes: list[dict[str, Any]], output: str, *messages: str, answers: str = UPSTREAM_AIRGAPPED
) -> HostileCase:
    return _case(name, nodes, output, 2, answers=answers, stderr_has=("gpu-wizard: error:", *messages))


CASES: list[HostileCase] = [
    # node names: a DNS-1123 subdomain, nothing else
    _refused(
        "name with newline and command", [node("gpu-0"), node(f"gpu-1\n{INJECTED} #")], "mirror", NAME_RULE, "\\x0a"
    ),
    _refused("name with CR and erase-line", [node(f"gpu-1\r\x1b[2K{INJECTED} #")], "mirror", NAME_RULE, "\\x1b"),
    _refused("name with $()", [node("gpu-$(id)")], "mirror", NAME_RULE),
    _refused("name with backticks", [node("gpu-`id`")], "images", NAME_RULE),
    _refused("name with semicolon", [node(f"gpu-1;{INJECTED}")], "yaml", NAME_RULE),
    _refused("name with quotes", [node("gpu-1'\"")], "mirror", NAME_RULE),
    _refused("name with U+2028", [node(f"gpu-1\u2028{INJECTED}")], "mirror", NAME_RULE, "\\u2028"),
    _refused("name with NEL", [node(f"gpu-1\u0085{INJECTED}")], "mirror", NAME_RULE, "\\x85"),
    _refused("name with full-width digit", [node("gpu-\uff11")], "images", NAME_RULE),
    _refused("name with NUL", [node("gpu-1\x00")], "mirror", NAME_RULE, "\\x00"),
    _refused("upper-case name", [node("GPU-1")], "yaml", NAME_RULE),
    _refused("name of 254 characters", [node("g" * 254)], "images", NAME_RULE, "at most 253"),
    # NFD labels: Kubernetes label values
    _refused(
        "kernel label with ;",
        [sle_node(kernel=f"5.15.0;{INJECTED}")],
        "mirror",
        KERNEL,
        LABEL_RULE,
        answers=PRECOMPILED,
    ),
    _refused("kernel label with space", [sle_node(kernel="5.15.0 x")], "images", KERNEL, answers=PRECOMPILED),
    _refused("kernel label with ../", [sle_node(kernel="../../etc")], "images", KERNEL, answers=PRECOMPILED),
    _refused(
        "kernel label with newline", [sle_node(kernel=f"5.15\n{INJECTED}")], "mirror", KERNEL, answers=PRECOMPILED
    ),
    _refused("kernel label of 64 characters", [sle_node(kernel="5" * 64)], "yaml", KERNEL, answers=PRECOMPILED),
    _refused("OS ID label with newline", [node(os_id=f"ubuntu\n{INJECTED}")], "mirror", OS_ID, LABEL_RULE),
    _refused("OS ID label with CR and ESC", [node(os_id="ubuntu\r\x1b[2K")], "images", OS_ID),
    _refused("OS version label with $()", [node(os_version="22.04$(id)")], "mirror", OS_VERSION),
    _refused("GPU product label with newline", [node(labels={"nvidia.com/gpu.product": f"L40S\n{INJECTED}"})], "yaml"),
    _refused("label key with newline", [node(labels={f"evil\n{INJECTED}": "x"})], "mirror", "is not a label key"),
    # the kubelet's free text: the kernel is used as NFD would label it, the OS image only parsed
    _refused(
        "nodeInfo kernel with newline (no NFD)",
        [sle_node(kernel=None, info_kernel=f"5.14.21-default\n{INJECTED}")],
        "mirror",
        "status.nodeInfo.kernelVersion",
        answers=PRECOMPILED,
    ),
    _case(
        "osImage with newline and command",
        [node(kernel=None, os_id=None, os_version=None, os_image=f"Ubuntu 22.04 LTS\n{INJECTED} #")],
        "mirror",
        0,
        stdout_has=("driver:580.126.20-ubuntu22.04",),
        stderr_has=("a prediction from each node's status.nodeInfo",),
    ),
    _case(
        "osImage with ESC sequences, YAML output",
        [node(os_image="Ubuntu 22.04\x1b]0;title\x07\x1b[2K")],
        "yaml",
        0,
        stdout_lacks=("\x1b",),
    ),
    # an image tag longer than 128 characters, every part a valid label value
    _refused(
        "kernel and OS too long for a tag",
        [sle_node(kernel="k" * 63, os_id="o" * 63, os_version="1" * 5)],
        "images",
        "is not an image tag",
        answers=PRECOMPILED,
    ),
    # nodes the operator cannot place: a warning, never -unknown or an empty kernel
    _case(
        "no NFD OS labels while NFD runs",
        [node(os_id=None, os_version=None)],
        "images",
        0,
        stderr_has=("No driver image can be predicted", OS_ID),
        stdout_has=("gpu-0\t?",),
        stdout_lacks=("-unknown",),
    ),
    _case(
        "no kernel anywhere (precompiled)",
        [sle_node(kernel=None, info_kernel="", labels={f"{NFD}/cpu-model.family": "6"})],
        "mirror",
        0,
        answers=PRECOMPILED,
        stderr_has=("No driver image can be predicted", KERNEL),
        stdout_lacks=("--sle-micro", "docker://"),
    ),
    _case(
        "unknown osImage without NFD",
        [node(kernel=None, os_id=None, os_version=None, os_image="Plan 9 from Bell Labs")],
        "images",
        0,
        stderr_has=("No driver image can be predicted", "Plan 9"),
        stdout_lacks=("-unknown",),
    ),
    _case(
        "Bottlerocket GPU node (precompiled)",
        [sle_node(os_id="bottlerocket", os_version="1.20.0", os_image="Bottlerocket OS 1.20.0 (aws-k8s-1.29-nvidia)")],
        "images",
        0,
        answers=PRECOMPILED,
        stderr_has=("No driver container exists", "Bottlerocket"),
    ),
    _case(
        "Amazon Linux without NFD (upstream)",
        [node(kernel=None, os_id=None, os_version=None, os_image="Amazon Linux 2023.5.20240624")],
        "images",
        0,
        stderr_has=("No driver container exists", "Amazon Linux"),
    ),
    _case(
        "arm64 GPU node (precompiled)",
        [sle_node(arch="arm64")],
        "images",
        0,
        answers=PRECOMPILED,
        stderr_has=("x86_64 only", "arm64"),
    ),
    _case(
        "NFD kernel disagrees with nodeInfo",
        [sle_node(info_kernel="5.14.21-150500.55.170-default")],
        "images",
        0,
        answers=PRECOMPILED,
        stderr_has=("disagree", "5.14.21-150500.55.170-default"),
    ),
    HostileCase(
        name="nodes: mirror command with a newline in a node name",
        argv=("mirror", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json"),
        expect_exit=2,
        files={"answers.yaml": UPSTREAM_AIRGAPPED, "nodes.json": json.dumps({"items": [node(f"gpu-1\n{INJECTED}")]})},
        stderr_has=(NAME_RULE,),
        stdout_lacks=(f"\n{INJECTED}",),
    ),
    HostileCase(
        name="nodes: mirror command warns about a node left out",
        argv=("mirror", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json"),
        expect_exit=0,
        files={
            "answers.yaml": UPSTREAM_AIRGAPPED,
            "nodes.json": json.dumps({"items": [node(os_id=None, os_version=None)]}),
        },
        stderr_has=("warning: No driver image can be predicted for gpu-0",),
        stdout_has=("# nothing to mirror",),
    ),
    _case(
        "air-gapped upstream docker fallback stays commented",
        [node("gpu-0"), node("gpu-1")],
        "mirror",
        0,
        stdout_has=("#   docker pull ", "# nodes: gpu-0, gpu-1"),
        stdout_lacks=("\ndocker ",),
    ),
    # runtime flavour: kubelet and runtime versions are free text, matched exactly or not at all
    _case(
        "kubelet version with newline and rke2 suffix",
        [
            _with_info(
                node(), kubeletVersion=f"v1.31.4+rke2r1\n{INJECTED}", containerRuntimeVersion="containerd://1.7.23"
            )
        ],
        "yaml",
        0,
        stdout_lacks=("/var/lib/rancher/rke2", "\x1b"),
    ),
    _case(
        "runtime version with escape and RKE2 kubelet",
        [
            _with_info(
                node(),
                kubeletVersion="v1.31.4+rke2r1",
                containerRuntimeVersion=f"containerd://1.7\x1b]0;{INJECTED}\x07",
            )
        ],
        "yaml",
        0,
        stdout_has=("/run/k3s/containerd/containerd.sock",),
        stdout_lacks=("\x1b",),
    ),
]
