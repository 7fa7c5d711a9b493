"""What the operator's containers do on a simulated node: when they finish, wait, or fail, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.demo.rules.operator_rules import OperatorRelease, RuleError, pool_os_tag
from wizard.demo.sim.operands import DRIVER_CTR, MANAGER_CTR
from wizard.demo.sim.world import NodeView, pod_ready


@dataclass(frozen=True)
class Verdict:
    """An outcome and the log line explaining it."""

    outcome: str
    reason: str = ""


def _driver_validation(view: NodeView) -> Verdict:
    if view.host_driver_ok:
        return Verdict("done", "Detected a pre-installed driver on the host")
    if view.driver_pod is not None:
        if not view.driver_loaded:
            return Verdict("wait", "waiting for the driver container to be ready")
        if view.mount(view.driver_install_dir).noexec:
            return Verdict(
                "fail",
                f"failed to validate the driver: chroot {view.driver_install_dir} nvidia-smi: "
                "fork/exec /usr/bin/nvidia-smi: permission denied: exit status 126",
            )
        return Verdict("done", "Driver is managed by the operator and ready")
    if view.driver_ds_exists and view.labels.get("nvidia.com/gpu.deploy.driver") == "true":
        return Verdict("wait", "waiting for the driver pod to be scheduled")
    code = 9 if view.spec.host_driver_broken else 127
    return Verdict("fail", f"No pre-installed driver detected on the host: exit status {code}")


def _toolkit_validation(view: NodeView) -> Verdict:
    if not view.toolkit_ds_exists:
        return Verdict("done", "toolkit is not managed by the operator")
    if view.toolkit_pod is None or not pod_ready(view.toolkit_pod):
        return Verdict("wait", "waiting for the container toolkit to be ready")
    if view.mount(view.toolkit_install_dir).noexec:
        return Verdict(
            "fail",
            f"failed to validate the toolkit: {view.toolkit_install_dir}/toolkit/nvidia-container-runtime: "
            "permission denied",
        )
    if not view.nvidia_runtime_configured:  # the toolkit wrote a drop-in this node's containerd never reads
        return Verdict(
            "fail",
            "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: "
            'no runtime for "nvidia" is configured',
        )
    return Verdict("done", "toolkit validation successful")


def _plugin_validation(view: NodeView) -> Verdict:
    if not view.plugin_ds_exists:
        return Verdict("done", "device plugin is not managed by the operator")
    if view.plugin_pod is None or not pod_ready(view.plugin_pod):
        return Verdict("wait", "waiting for the device plugin to advertise nvidia.com/gpu")
    return Verdict("done", f"GPU resources are available: nvidia.com/gpu={view.spec.advertised_gpus}")


def init_outcome(pod: dict[str, Any], container: str, view: NodeView | None) -> Verdict:
    """Whether a running init container completes, keeps running, or fails."""
    if view is None:
        return Verdict("done")
    if container == MANAGER_CTR:
        if view.host_driver_ok:
            return Verdict("wait", "driver is pre-installed on host")
        return Verdict("done", "Unloading NVIDIA driver kernel modules...")
    if container == "driver-validation":
        return _driver_validation(view)
    if container == "toolkit-validation":
        return _toolkit_validation(view)
    if container == "cuda-validation":
        verdict = _toolkit_validation(view)
        return Verdict(
            verdict.outcome, "cuda workload validation is successful" if verdict.outcome == "done" else verdict.reason
        )
    if container == "plugin-validation":
        return _plugin_validation(view)
    return Verdict("done")


def image_mismatch(image: str, view: NodeView, release: OperatorRelease) -> str:
    """Why a driver image cannot work on this node (built for another OS or kernel), or ""."""
    if "@" in image:
        return ""
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    spec = view.spec
    try:
        node_tag = pool_os_tag(spec.os_id, spec.os_version, release)
    except RuleError:
        return ""
    if not tag or "-" not in tag:
        return ""
    if not tag.endswith(f"-{node_tag}"):
        built_for = tag.rsplit("-", 1)[-1]
        return f"this image is built for {built_for} but the host runs {node_tag}"
    middle = tag[: -len(node_tag) - 1].partition("-")[2]  # precompiled: <version>-<kernel>-<osTag>
    if middle and middle != spec.kernel:
        return f"this image carries modules for kernel {middle} but the host runs {spec.kernel}"
    return ""


REFUSAL_LAST_LINE = {
    "kernel-headers": "Could not resolve Linux kernel version",
    "nouveau": "ERROR: The Nouveau kernel driver is currently in use by your system.",
    "secure-boot": "Kernel module load error: Key was rejected by service",
}
"""The last line the driver container prints for each way the host refuses it (full logs: podlogs)."""


def precompiled_pod(pod: dict[str, Any]) -> bool:
    """The driver pod installs precompiled (signed) modules instead of compiling them."""
    return any(e.get("name") == "PRECOMPILED" for c in pod["spec"]["containers"] for e in c.get("env") or [])


def driver_refusal(pod: dict[str, Any], view: NodeView) -> str:
    """Why this node's host refuses the driver container, as the real script meets it, or ""."""
    spec = view.spec
    precompiled = precompiled_pod(pod)
    mirror = any(v.get("name") == "repo-config" for v in pod["spec"].get("volumes") or [])  # driver.repoConfig
    if not precompiled and not spec.kernel_headers and not spec.package_repo and not mirror:
        return "kernel-headers"
    if spec.nouveau:
        return "nouveau"
    if spec.secure_boot and not precompiled:
        return "secure-boot"
    return ""


def main_outcome(pod: dict[str, Any], container: str, view: NodeView | None, release: OperatorRelease) -> Verdict:
    """Whether a running main container becomes ready or crashes (checked a tick after it starts)."""
    if view is None:
        return Verdict("ready")
    if container == DRIVER_CTR:
        if view.spec.host_driver_broken:
            return Verdict("crash", "Could not unload NVIDIA driver kernel modules, driver is in use")
        image = next((c.get("image", "") for c in pod["spec"]["containers"] if c.get("name") == DRIVER_CTR), "")
        why = image_mismatch(str(image), view, release)
        if why:
            return Verdict("crash", why)
        refusal = driver_refusal(pod, view)
        if refusal:
            return Verdict("crash", REFUSAL_LAST_LINE[refusal])
        return Verdict("ready")
    if container == "nvidia-container-toolkit-ctr" and not view.mount(view.toolkit_install_dir).writable:
        return Verdict("crash", f"mkdir {view.toolkit_install_dir}: read-only file system")
    if container == "nvidia-container-toolkit-ctr" and view.toolkit_error:
        return Verdict("crash", view.toolkit_error)
    return Verdict("ready")
