"""The GPU Operator's own unit-test cases as data: the peer table both rule implementations must answer.

Each :class:`Peer` names the operator test (file, test, case, tag) and the operator's expected answer;
``tests/test_demo_operator_rules.py`` asks the demo's rules and the engine's the same question. Where
the engine disagrees (``engine_disagrees``, none today since issue 11) or has no counterpart
(``engine_skip``) the row says why. A node the operator cannot place (no NFD OS or kernel label, a
VERSION_ID it fails to parse) is, in the engine, a node without an image and with a ``node-unplaced``
warning: the table's ``ERROR`` (ClusterPolicy) or ``None`` (NVIDIADriver pools skip it). Cases are
transcribed from ``NVIDIA/gpu-operator`` at the tags named.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.demo.rules.operator_rules import (
    LABEL_KERNEL,
    LABEL_OS_ID,
    LABEL_OS_VERSION,
    OperatorRelease,
    sanitized_kernel,
)

NFD_ID, NFD_VERSION, NFD_KERNEL = LABEL_OS_ID, LABEL_OS_VERSION, LABEL_KERNEL
ERROR = "<error>"
"""Expected answer of a case the operator refuses."""

V25, V26_3, V26_7 = OperatorRelease(25, 10, 1), OperatorRelease(26, 3, 3), OperatorRelease(26, 7, 0)
NODEPOOL_TEST = "internal/state/nodepool_test.go"
STATE_MANAGER_TEST = "controllers/state_manager_test.go"
OBJECT_CONTROLS_TEST = "controllers/object_controls_test.go"
DRIVER_TEST = "internal/state/driver_test.go"
TYPES_TEST = "api/nvidia/v1alpha1/nvidiadriver_types_test.go"
DIGEST = "sha256:" + "a" * 64
UID = "bfac7359-6033-45ce-88d6-53db0078526e"


@dataclass(frozen=True)
class Peer:
    """One operator test case: what to ask, the operator's answer, and the engine's standing."""

    source: str
    """``file TestName 'case' @tag``."""
    question: str
    """Which rule: a key of ``DEMO`` / ``ENGINE`` in ``tests/test_demo_operator_rules.py``."""
    args: tuple[Any, ...]
    expected: Any
    engine_disagrees: str = ""
    engine_skip: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.source.split(" ", 1)[1].replace(" ", "_")


def _nfd(os_id: str | None, version: str | None, kernel: str | None = None) -> dict[str, str]:
    labels = {"nvidia.com/gpu.present": "true"}
    for key, value in ((NFD_ID, os_id), (NFD_VERSION, version), (NFD_KERNEL, kernel)):
        if value is not None:
            labels[key] = value
    return labels


def node_json(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "gpu-node-1", "labels": labels}, "status": {"nodeInfo": {}}}


def _os_tag_rows() -> list[Peer]:
    rows = []
    for tag, release, cases in (
        (
            "v26.3.3",
            V26_3,
            [
                ("valid os release & version", "rhel", "9.4", "rhel9.4", ""),
                ("valid os release & version - ubuntu", "ubuntu", "24.04", "ubuntu24.04", ""),
                ("rocky linux", "rocky", "9.4", "rocky9", ""),
                ("RHEL 10", "rhel", "10.1", "rhel10", ""),
                ("talos version with v prefix", "talos", "v1.12.6", "talosv1.12.6", ""),
                ("archlinux rolling version", "archlinux", "rolling", "archlinuxrolling", ""),
                ("invalid os version", "rhel", "A.10", ERROR, ""),
            ],
        ),
        (
            "v26.7.0",
            V26_7,
            [
                ("valid os release & version", "rhel", "9.4", "rhel9", ""),
                ("valid os release & version - rhel8", "rhel", "8.10", "rhel8", ""),
                ("valid os release & version - ubuntu", "ubuntu", "24.04", "ubuntu24.04", ""),
                ("rocky linux", "rocky", "9.4", "rocky9", ""),
                ("oracle linux", "ol", "9.4", "ol9", ""),
                ("RHEL 10", "rhel", "10.1", "rhel10", ""),
                ("talos version with v prefix", "talos", "v1.12.6", "talosv1.12.6", ""),
                ("archlinux rolling version", "archlinux", "rolling", "archlinuxrolling", ""),
            ],
        ),
    ):
        for case, os_id, version, expected, why in cases:
            source = f"{NODEPOOL_TEST} TestGetOSTag '{case}' @{tag}"
            rows.append(Peer(source, "pool_os_tag", (os_id, version, release), expected, why))
    # v25.10.1 has no getOSTag: nodePool.getOS() is ID + VERSION_ID, always.
    for os_id, version in (("rhel", "9.4"), ("rocky", "9.4"), ("rhel", "10.1")):
        source = f"internal/state/nodepool.go getOS '{os_id} {version}' @v25.10.1"
        rows.append(Peer(source, "pool_os_tag", (os_id, version, V25), f"{os_id}{version}"))
    return rows


def _policy_os_rows() -> list[Peer]:
    common = [
        ("talos version with v prefix", "talos", "v1.12.6", "talosv1.12.6"),
        ("rhel 10 omits minor version", "rhel", "10.2", "rhel10"),
        ("rocky omits minor version", "rocky", "9.5", "rocky9"),
        ("ubuntu preserves full version", "ubuntu", "24.04", "ubuntu24.04"),
        ("sles preserves dotted version", "sles", "15.6", "sles15.6"),
        ("sles preserves service-pack version", "sles", "15-SP6", "sles15-SP6"),
        ("sl-micro preserves dotted version", "sl-micro", "6.0", "sl-micro6.0"),
        ("archlinux preserves rolling version", "archlinux", "rolling", "archlinuxrolling"),
    ]
    per_release = {
        "v26.3.3": (V26_3, [*common, ("rhel invalid major version errors", "rhel", "A.10", ERROR)]),
        "v26.7.0": (
            V26_7,
            [
                *common,
                ("rhel 9 omits minor version", "rhel", "9.4", "rhel9"),
                ("rhel 8 omits minor version", "rhel", "8.10", "rhel8"),
                ("ol omits minor version", "ol", "9.5", "ol9"),
            ],
        ),
    }
    rows = []
    for tag, (release, cases) in per_release.items():
        for case, os_id, version, expected in cases:
            source = f"{STATE_MANAGER_TEST} TestGetGPUNodeOSInfo '{case}' @{tag}"
            rows.append(Peer(source, "policy_os_tag", (_nfd(os_id, version), release), expected))
        for case, labels in (
            ("missing OS release label", _nfd(None, "9.4")),
            ("missing OS version label", _nfd("rhel", None)),
        ):
            source = f"{STATE_MANAGER_TEST} TestGetGPUNodeOSInfoMissingLabels '{case}' @{tag}"
            rows.append(Peer(source, "policy_os_tag", (labels, release), ERROR))
    return rows


def _pool_rows() -> list[Peer]:
    kernel = "5.15.0-70-generic_x86_64"
    return [
        Peer(
            f"{NODEPOOL_TEST} TestGetNodePoolsPartitionsPrecompiledNodesByKernel 'kernel-node' @v26.7.0",
            "pool_image",
            (_nfd("ubuntu", "22.04", kernel), V26_7),
            f"nvcr.io/nvidia/driver:580-{kernel}-ubuntu22.04",
        ),
        Peer(
            f"{NODEPOOL_TEST} TestGetNodePoolsPartitionsPrecompiledNodesByKernel 'missing-kernel-node' @v26.7.0",
            "pool_image",
            (_nfd("ubuntu", "22.04"), V26_7),
            None,
            "",
        ),
        Peer(
            f"{NODEPOOL_TEST} TestGetNodePoolsSkipsNodesMissingNFDOSLabels 'missing-os-release' @v26.7.0",
            "pool_image",
            (_nfd(None, "9.4", kernel), V26_7),
            None,
            "",
        ),
        Peer(
            f"{NODEPOOL_TEST} TestGetNodePoolsSkipsNodesMissingNFDOSLabels 'missing-os-version' @v26.7.0",
            "pool_image",
            (_nfd("rhel", None, kernel), V26_7),
            None,
            "",
        ),
    ]


def _name_rows() -> list[Peer]:
    rows = [
        Peer(
            f"{OBJECT_CONTROLS_TEST} TestGetSanitizedKernelVersion '{kernel}' @v26.7.0",
            "sanitized_kernel",
            (kernel,),
            "5.14.0-427.37.1.el9.4",
        )
        for kernel in (
            "5.14.0-427.37.1.el9_4.aarch64_64k",
            "5.14.0-427.37.1.el9_4.aarch64",
            "5.14.0-427.37.1.el9_4.x86_64_64k",
            "5.14.0-427.37.1.el9_4.x86_64",
        )
    ]
    for case, args, kwargs, expected in (
        ("ubuntu20.04", ("gpu", "ubuntu20.04", UID), {}, "nvidia-gpu-driver-ubuntu20.04-67cc6dbb79"),
        (
            "with kernelVersion",
            ("gpu", "ubuntu20.04", UID),
            {"kernel": "5.15.0-70-generic"},
            "nvidia-gpu-driver-ubuntu20.04-59b779bcc5",
        ),
        (
            "a really long osVersion (cut to 63)",
            ("gpu", "redhatCoreOS4.14-414.92.202309282257", UID),
            {"kernel": "5.15.0-70-generic"},
            "nvidia-gpu-driver-redhatCoreOS4.14-414.92.2023092822-59b779bcc5",
        ),
        ("RockyLinux", ("gpu", "rocky9", UID), {"kernel": "5.15.0-70-generic"}, "nvidia-gpu-driver-rocky9-59b779bcc5"),
        ("RHEL10", ("gpu", "rhel10", UID), {"kernel": "5.15.0-70-generic"}, "nvidia-gpu-driver-rhel10-59b779bcc5"),
    ):
        rows.append(
            Peer(
                f"{DRIVER_TEST} TestGetDriverAppName '{case}' @v26.7.0",
                "app_name",
                args,
                expected,
                "",
                "",
                kwargs,
            )
        )
    rows.append(
        Peer(
            f"{DRIVER_TEST} TestGetDriverAppNameRHCOS 'rhcos4.14' @v26.7.0",
            "app_name",
            ("gpu", "rhcos4.14", "d5b3a1f2-38a9-4b72-bff1-21fd569fd305"),
            "nvidia-gpu-driver-rhcos4.14-6f4fc4fc6",
            "",
            "",
            {"rhcos": "414.92.202309282257"},
        )
    )
    for os_id, version, kernel in (
        ("rhel", "9.4", "5.14.0-427.13.1.el9_4.x86_64"),
        ("ubuntu", "22.04", "5.4.0-generic"),
    ):
        rows.append(
            Peer(
                f"controllers/object_controls.go transformPrecompiledDriverDaemonset '{os_id}{version}' @v26.7.0",
                "precompiled_ds_name",
                (kernel, _nfd(os_id, version, kernel)),
                f"nvidia-driver-daemonset-{sanitized_kernel(kernel)}-{os_id}{version}",
            )
        )
    return rows


def _image_rows() -> list[Peer]:
    rows = [
        Peer(
            f"{OBJECT_CONTROLS_TEST} TestDriver 'Default' @v26.7.0",
            "policy_image",
            ("nvcr.io/nvidia", "driver", "470.57.02"),
            "nvcr.io/nvidia/driver:470.57.02-ubuntu22.04",
            kwargs={"precompiled": False, "kernel": "5.4.0-generic", "os_tag": "ubuntu22.04"},
        ),
        Peer(
            f"{OBJECT_CONTROLS_TEST} TestDriver 'Precompiled Drivers' @v26.7.0",
            "policy_image",
            ("nvcr.io/nvidia", "driver", "470.57.02"),
            "nvcr.io/nvidia/driver:470.57.02-5.4.0-generic-ubuntu22.04",
            kwargs={"precompiled": True, "kernel": "5.4.0-generic", "os_tag": "ubuntu22.04"},
        ),
    ]
    for test, precompiled, cases in (
        (
            "TestGetImagePath",
            False,
            [
                (
                    "only image provided with tag",
                    ("", "nvcr.io/nvidia/driver:525.85.03", ""),
                    "nvcr.io/nvidia/driver:525.85.03-ubuntu22.04",
                    "",
                ),
                (
                    "only image provided with digest",
                    ("", f"nvcr.io/nvidia/driver@{DIGEST}", ""),
                    f"nvcr.io/nvidia/driver@{DIGEST}",
                    "",
                ),
                (
                    "image contains a tag",
                    ("nvcr.io/nvidia", "nvcr.io/nvidia/driver:525.85.03", "535.104.05"),
                    ERROR,
                    "",
                ),
                (
                    "image contains a digest",
                    ("nvcr.io/nvidia", f"nvcr.io/nvidia/driver@{DIGEST}", "535.104.05"),
                    ERROR,
                    "",
                ),
                ("missing version", ("nvcr.io/nvidia", "driver", ""), ERROR, ""),
                (
                    "version is a tag",
                    ("nvcr.io/nvidia", "driver", "535.104.05"),
                    "nvcr.io/nvidia/driver:535.104.05-ubuntu22.04",
                    "",
                ),
                ("version is a digest", ("nvcr.io/nvidia", "driver", DIGEST), f"nvcr.io/nvidia/driver@{DIGEST}", ""),
            ],
        ),
        (
            "TestGetPrecompiledImagePath",
            True,
            [
                (
                    "only image provided with tag",
                    ("", "nvcr.io/nvidia/driver:525", ""),
                    "nvcr.io/nvidia/driver:525-5.4.0-150-generic-ubuntu22.04",
                    "",
                ),
                (
                    "only image provided with digest",
                    ("", f"nvcr.io/nvidia/driver@{DIGEST}", ""),
                    ERROR,
                    "",
                ),
                (
                    "image contains a tag",
                    ("nvcr.io/nvidia", "nvcr.io/nvidia/driver:525.85.03", "535.104.05"),
                    ERROR,
                    "",
                ),
                ("missing version", ("nvcr.io/nvidia", "driver", ""), ERROR, ""),
                (
                    "version is a tag",
                    ("nvcr.io/nvidia", "driver", "535"),
                    "nvcr.io/nvidia/driver:535-5.4.0-150-generic-ubuntu22.04",
                    "",
                ),
                ("version is a digest", ("nvcr.io/nvidia", "driver", DIGEST), ERROR, ""),
            ],
        ),
    ):
        for case, args, expected, why in cases:
            kwargs = {"precompiled": precompiled, "kernel": "5.4.0-150-generic", "os_tag": "ubuntu22.04"}
            rows.append(Peer(f"{TYPES_TEST} {test} '{case}' @v26.7.0", "nvd_image", args, expected, why, "", kwargs))
    return rows


def _mount_rows() -> list[Peer]:
    no_engine = "the engine renders no DaemonSet, so it has no lib-modules rule"
    rows = [
        Peer(
            f"{OBJECT_CONTROLS_TEST} TestDriverPrecompiledLibModulesSuse '{tag}' @v26.7.0",
            "lib_modules",
            (V26_7,),
            True,
            engine_skip=no_engine,
            kwargs={"precompiled": True, "os_id": os_id},
        )
        for tag, os_id in (("sles16.0", "sles"), ("sl-micro6.1", "sl-micro"))
    ]
    rows.append(
        Peer(
            f"{OBJECT_CONTROLS_TEST} TestDriverPrecompiledLibModulesUbuntu 'ubuntu22.04' @v26.7.0",
            "lib_modules",
            (V26_7,),
            False,
            engine_skip=no_engine,
            kwargs={"precompiled": True, "os_id": "ubuntu"},
        )
    )
    rows.append(
        Peer(
            "controllers/object_controls.go transformDriverContainer 'no lib-modules before PR #2252' @v25.10.1",
            "lib_modules",
            (V25,),
            False,
            engine_skip=no_engine,
            kwargs={"precompiled": True, "os_id": "sles"},
        )
    )
    for os_id, release, tag, expected, why in (
        ("ubuntu", V25, "v25.10.1", True, ""),
        ("rocky", V25, "v25.10.1", False, ""),
        ("sles", V25, "v25.10.1", False, ""),
        ("rocky", V26_3, "v26.3.3", True, ""),
        ("ol", V26_3, "v26.3.3", False, ""),
        ("ol", V26_7, "v26.7.0", True, ""),
        ("sl-micro", V26_7, "v26.7.0", True, ""),
        ("sle-micro", V26_7, "v26.7.0", False, ""),
    ):
        source = f"{OBJECT_CONTROLS_TEST} TestRepoConfigPathMap / RepoConfigPathMap '{os_id}' @{tag}"
        rows.append(Peer(source, "repo_config", (release, os_id), expected, why))
    return rows


PEERS = [*_os_tag_rows(), *_policy_os_rows(), *_pool_rows(), *_name_rows(), *_image_rows(), *_mount_rows()]
