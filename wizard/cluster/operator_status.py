"""What the operator says about itself: ClusterPolicy / NVIDIADriver state as checks, and the live host paths.

The policy's own state is worded by :func:`wizard.engine.policy_health.policy_health` (Connect says the
same); ``NoGPUNodes`` and ``NFDLabelsMissing`` are failures here, since no driver was installed anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, DEFAULT_TOOLKIT_INSTALL_DIR, Plan
from wizard.engine.policy_health import policy_health, ready_condition
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
    health = policy_health(policy)
    checks = [Check("cluster-policy", Status.PASS if health.ready else Status.FAIL, health.message, hint=health.hint)]
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
