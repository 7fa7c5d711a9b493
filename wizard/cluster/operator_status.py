"""What the operator says about itself: ClusterPolicy / NVIDIADriver state as checks, and the live host paths.

``NoGPUNodes`` and ``NFDLabelsMissing`` come with ``state: ready`` and ``Ready=True``; they are
reported as failures, since no driver was installed anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.cluster.rollout import FALSE_READY_REASONS, ready_condition
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, DEFAULT_TOOLKIT_INSTALL_DIR, Plan
from wizard.engine.results import Check, Status
from wizard.engine.runtime import DEFAULT_CONTAINERD_DROP_IN, drop_in_path

DEFAULT_DROP_IN = DEFAULT_CONTAINERD_DROP_IN


def live_paths(policy: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(toolkit installDir, driverInstallDir, containerd drop-in) as the live ClusterPolicy sets them.

    The drop-in is where the toolkit writes it for the live ``toolkit.env`` (RKE2, k3s, k0s keep it
    in their own containerd folders), derived as the operator derives it.
    """
    spec = (policy or {}).get("spec") or {}
    toolkit = spec.get("toolkit") or {}
    env = {str(e.get("name")): str(e.get("value") or "") for e in toolkit.get("env") or [] if isinstance(e, Mapping)}
    return (
        str(toolkit.get("installDir") or DEFAULT_TOOLKIT_INSTALL_DIR),
        str((spec.get("hostPaths") or {}).get("driverInstallDir") or DEFAULT_DRIVER_INSTALL_DIR),
        drop_in_path(env),
    )


def policy_checks(plan: Plan, policy: Mapping[str, Any] | None, drivers: list[dict[str, Any]]) -> list[Check]:
    """ClusterPolicy (and NVIDIADriver) state and conditions; NoGPUNodes / NFDLabelsMissing are not success."""
    if policy is None:
        return [
            Check(
                "cluster-policy",
                Status.FAIL,
                "no ClusterPolicy in the cluster",
                hint="apply the plan first: gpu-wizard apply --answers FILE",
            )
        ]
    name = policy["metadata"]["name"]
    status = policy.get("status") or {}
    state = str(status.get("state") or "unknown")
    cond = ready_condition(dict(policy))
    reason, text = str(cond.get("reason") or ""), str(cond.get("message") or "")
    checks: list[Check]
    if state == "ready" and reason in FALSE_READY_REASONS:
        checks = [
            Check(
                "cluster-policy",
                Status.FAIL,
                f"{name} reports ready but {reason}: {text}".rstrip(": "),
                hint="the operator sees no usable GPU node: check NFD and the nvidia.com/gpu.present labels",
            )
        ]
    elif state == "ready":
        checks = [Check("cluster-policy", Status.PASS, f"{name} ready ({reason or 'Ready'})")]
    else:
        errors = [c for c in status.get("conditions") or [] if c.get("type") == "Error" and c.get("status") == "True"]
        detail = (errors[0].get("message") if errors else text) or "no condition message"
        checks = [
            Check(
                "cluster-policy",
                Status.FAIL,
                f"{name} is {state}: {detail}",
                hint="gpu-wizard apply follows the rollout; see the driver pods' events",
            )
        ]
    if plan.driver_enabled and plan.driver.useNvidiaDriverCRD:
        if not drivers:
            checks.append(
                Check(
                    "nvidia-driver", Status.FAIL, "no NVIDIADriver object in the cluster", hint="apply the plan first"
                )
            )
        for driver in drivers:
            dname = driver["metadata"]["name"]
            dstate = str((driver.get("status") or {}).get("state") or "unknown")
            dcond = ready_condition(driver)
            msg = str(dcond.get("message") or dcond.get("reason") or "")
            if dstate == "ready":
                checks.append(Check("nvidia-driver", Status.PASS, f"{dname} ready"))
            elif dstate == "disabled":
                checks.append(
                    Check(
                        "nvidia-driver",
                        Status.FAIL,
                        f"{dname} disabled: {msg}",
                        hint="set driver.useNvidiaDriverCRD: true in the ClusterPolicy (the answers' driver.useNvidiaDriverCRD)",
                    )
                )
            else:
                checks.append(Check("nvidia-driver", Status.FAIL, f"{dname} is {dstate}: {msg}".rstrip(": ")))
    return checks
