"""Container logs of the simulated operator pods, worded like the real components print them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from wizard.demo.rules.operator_rules import OperatorRelease
from wizard.demo.sim import smi
from wizard.demo.sim.operands import DRIVER_CTR, MANAGER_CTR
from wizard.demo.sim.simutil import now
from wizard.demo.sim.workloads import REFUSAL_LAST_LINE, driver_refusal, init_outcome, main_outcome, precompiled_pod
from wizard.demo.sim.world import NodeView, container_status, driver_version_of, is_running


def _logrus(lines: list[str], level: str = "info") -> str:
    stamp = now()
    return "".join(f'time="{stamp}" level={level} msg="{line}"\n' for line in lines)


def _manager(view: NodeView) -> str:
    head = [
        "Getting current value of the 'nvidia.com/gpu.deploy.operator-validator' node label",
        "Current value of 'nvidia.com/gpu.deploy.operator-validator=true'",
        "Getting current value of the 'nvidia.com/gpu.deploy.container-toolkit' node label",
        "Current value of 'nvidia.com/gpu.deploy.container-toolkit=true'",
    ]
    if view.host_driver_ok:
        return _logrus([*head, "driver is pre-installed on host"])
    return _logrus(
        [
            *head,
            "Shutting down all GPU clients on the current node by disabling their component-specific nodeSelector labels",
            "Unloading NVIDIA driver kernel modules...",
            "NVIDIA driver kernel modules are not loaded",
            "Unmounting NVIDIA driver rootfs...",
            "Rescheduling all GPU clients on the current node by enabling their component-specific nodeSelector labels",
        ]
    )


def _driver(pod: dict[str, Any], view: NodeView, release: OperatorRelease) -> str:
    image = next((str(c.get("image", "")) for c in pod["spec"]["containers"] if c.get("name") == DRIVER_CTR), "")
    version = driver_version_of(image)
    kernel = view.spec.kernel
    precompiled = precompiled_pod(pod)
    lines = [
        "DRIVER_ARCH is x86_64",
        f"Creating directory NVIDIA-Linux-x86_64-{version}",
        f"Starting installation of NVIDIA driver version {version} for Linux kernel version {kernel}",
        "",
        "Stopping NVIDIA persistence daemon...",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
        "Checking NVIDIA driver packages...",
    ]
    verdict = main_outcome(pod, DRIVER_CTR, view, release)
    refusal = driver_refusal(pod, view) if verdict.outcome == "crash" else ""
    if refusal:
        return "\n".join([*lines, *_refused(refusal, view, precompiled, version), *_SHUTDOWN, ""])
    if verdict.outcome == "crash":
        return "\n".join([*lines, verdict.reason, "Stopping NVIDIA persistence daemon...", ""])
    if precompiled:
        lines += [f"Found precompiled kernel modules for kernel {kernel}", "Installing NVIDIA driver kernel modules..."]
    else:
        lines += [
            "Updating the package cache...",
            "Resolving Linux kernel version...",
            f"Proceeding with Linux kernel version {kernel}",
            "Installing Linux kernel headers...",
            "Installing Linux kernel module files...",
            "Generating Linux kernel version string...",
            "Compiling NVIDIA driver kernel modules...",
            "Relinking NVIDIA driver kernel modules...",
            f"Building NVIDIA driver package nvidia-modules-{kernel}...",
            "Installing NVIDIA driver kernel modules...",
        ]
    if not view.driver_loaded:
        return "\n".join(lines) + "\n"
    lines += [
        "Loading ipmi and i2c_core kernel modules...",
        "Loading NVIDIA driver kernel modules...",
        "+ modprobe nvidia",
        "+ modprobe nvidia-uvm",
        "+ modprobe nvidia-modeset",
        "+ set +o xtrace -o nounset",
        "Starting NVIDIA persistence daemon...",
        "Mounting NVIDIA driver rootfs...",
        "Done, now waiting for signal",
    ]
    return "\n".join(lines) + "\n"


_SHUTDOWN = [
    "Stopping NVIDIA persistence daemon...",
    "Unloading NVIDIA driver kernel modules...",
    "Unmounting NVIDIA driver rootfs...",
]
_UBUNTU_CODENAMES = {"20.04": "focal", "22.04": "jammy", "24.04": "noble"}


def _package_cache(view: NodeView) -> list[str]:
    """What the OS's package manager prints when its repositories cannot be reached."""
    spec = view.spec
    if spec.os_id in ("ubuntu", "debian"):
        codename = _UBUNTU_CODENAMES.get(spec.os_version, "jammy")
        return [
            f"W: Failed to fetch http://archive.ubuntu.com/ubuntu/dists/{codename}/InRelease  "
            "Temporary failure resolving 'archive.ubuntu.com'",
            "W: Some index files failed to download. They have been ignored, or old ones used instead.",
        ]
    if spec.os_id.startswith("sle") or spec.os_id.startswith("sl-") or spec.os_id == "opensuse-leap":
        return [
            "Download (curl) error for 'https://updates.suse.com/SUSE/Products/repodata/repomd.xml':",
            "Error code: Connection failed",
            "Error message: Could not resolve host: updates.suse.com",
        ]
    return [
        "Errors during downloading metadata for repository 'baseos':",
        "Error: Failed to download metadata for repo 'baseos': Cannot download repomd.xml: "
        "Cannot download repodata/repomd.xml: All mirrors were tried",
    ]


def _compiled(kernel: str) -> list[str]:
    return [
        "Installing Linux kernel headers...",
        "Installing Linux kernel module files...",
        "Generating Linux kernel version string...",
        "Compiling NVIDIA driver kernel modules...",
        f"Building NVIDIA driver package nvidia-modules-{kernel}...",
        "Installing NVIDIA driver kernel modules...",
        "",
        "WARNING: The nvidia-drm module will not be installed.",
    ]


def _refused(refusal: str, view: NodeView, precompiled: bool, version: str) -> list[str]:
    """The driver container's lines from where the host refuses it (the real scripts' and installer's words)."""
    kernel = view.spec.kernel
    if refusal == "kernel-headers":
        return [
            "Updating the package cache...",
            *_package_cache(view),
            "Resolving Linux kernel version...",
            REFUSAL_LAST_LINE[refusal],
        ]
    start = (
        [f"Found precompiled kernel modules for kernel {kernel}"]
        if precompiled
        else [
            "Updating the package cache...",
            "Resolving Linux kernel version...",
            f"Proceeding with Linux kernel version {kernel}",
            *_compiled(kernel),
        ]
    )
    if refusal == "nouveau" and precompiled:
        return [
            *start,
            "Loading NVIDIA driver kernel modules...",
            "+ modprobe nvidia",
            "modprobe: ERROR: could not insert 'nvidia': No such device",
            "Kernel messages:",
            "[   41.210553] NVRM: The NVIDIA probe routine was not called for 8 device(s).",
            "[   41.210557] NVRM: This can occur when a driver such as: nouveau, rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s).",
        ]
    if refusal == "nouveau":
        return [
            *start,
            f"Installing NVIDIA driver version {version}.",
            f"{REFUSAL_LAST_LINE[refusal]}  This driver is incompatible with the NVIDIA driver, and must be disabled before proceeding.",
            "ERROR: Installation has failed.",
        ]
    return [
        *start,
        "ERROR: The kernel module failed to load. Secure boot is enabled on this system, so this is likely because it was not signed by a key that is trusted by the kernel.",
        "ERROR: Unable to load the kernel module 'nvidia.ko'.",
        REFUSAL_LAST_LINE[refusal],
        "Kernel messages:",
        "[   38.904417] Loading of unsigned module is rejected",
    ]


def _validation(container: str, pod: dict[str, Any], view: NodeView) -> str:
    verdict = init_outcome(pod, container, view)
    lines = ["version: 10ee5b36, commit: 10ee5b3"]
    if container == "driver-validation":
        lines.append("Attempting to validate a pre-installed driver on the host")
        if view.host_driver_ok:
            lines.append("Detected a pre-installed driver on the host")
            table = smi.table(view.spec.host_driver, smi.gpus_of(view.spec), _now())
            return _logrus(lines) + "running command chroot with args [/host nvidia-smi]\n" + table
        code = 9 if view.spec.host_driver_broken else 14
        lines.append(f"No pre-installed driver detected on the host: exit status {code}")
        if view.driver_pod is not None:
            lines.append(
                "Driver is not pre-installed on the host and is managed by GPU Operator. Checking driver container status."
            )
    if verdict.outcome == "fail":
        return _logrus(lines) + _logrus([verdict.reason], "error")
    if verdict.outcome == "wait":
        return _logrus([*lines, verdict.reason])
    if container == "driver-validation" and view.driver_loaded:
        gpus = smi.gpus_of(view.spec)
        body = smi.table(view.driver_version, gpus, _now())
        return _logrus(lines) + f"running command chroot with args [{view.driver_install_dir} nvidia-smi]\n" + body
    return _logrus([*lines, verdict.reason])


def _now() -> dt.datetime:
    return dt.datetime.now()


def _toolkit(view: NodeView) -> str:
    base = f"{view.toolkit_install_dir}/toolkit"
    if not view.mount(view.toolkit_install_dir).writable:
        return _logrus(["Parsing arguments", "Starting nvidia-toolkit", "Verifying Flags"]) + _logrus(
            [
                f"error running nvidia-toolkit: unable to install toolkit: mkdir {view.toolkit_install_dir}: read-only file system"
            ],
            "error",
        )
    installed = [
        "Parsing arguments",
        "Starting nvidia-toolkit",
        "Verifying Flags",
        f"Installing NVIDIA container toolkit to '{base}'",
        f"Installing NVIDIA container toolkit config '{base}/.config/nvidia-container-runtime/config.toml'",
        f"Flushing config to {view.drop_in_path}",
        "Sending SIGHUP signal to containerd",
    ]
    if view.toolkit_error:  # the socket the operator mounted is not where this node's containerd listens
        return _logrus(installed) + _logrus([view.toolkit_error], "error")
    return _logrus(
        [*installed, "Successfully signaled containerd", "Completed 'setup' for containerd", "Waiting for signal"]
    )


def container_log(pod: dict[str, Any], container: str, view: NodeView | None, release: OperatorRelease) -> str:
    """The log of one operator container (empty for containers the simulation knows nothing about)."""
    if view is None:
        return ""
    cs = container_status(pod, container)
    if container == MANAGER_CTR:
        return _manager(view)
    if container == DRIVER_CTR:
        return _driver(pod, view, release)
    if container.endswith("-validation"):
        return _validation(container, pod, view)
    if container == "nvidia-container-toolkit-ctr":
        return _toolkit(view)
    if container == "nvidia-device-plugin":
        return _logrus(
            [
                "Starting FS watcher.",
                "Starting OS watcher.",
                "Starting Plugins.",
                "Loading configuration.",
                "Retrieving plugins.",
                "Starting GRPC server for 'nvidia.com/gpu'",
                "Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock",
                "Registered device plugin for 'nvidia.com/gpu' with Kubelet",
            ]
        )
    if container == "nvidia-operator-validator" and is_running(cs):
        return "all validations are successful\n"
    return ""
