"""What the operator says about itself: ClusterPolicy / NVIDIADriver state as checks, and the live host paths.

The policy's own state is worded by :func:`wizard.engine.policy_health.policy_health` (Connect says the
same); ``NoGPUNodes`` and ``NFDLabelsMissing`` are failures here, since no driver was installed anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
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


def _age(obj: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds since the object's ``Ready`` condition last flipped (None when it does not say)."""
    stamp = str(ready_condition(obj).get("lastTransitionTime") or "")
    try:
        return (now - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds()
    except (ValueError, TypeError):  # no stamp, or one without a zone
        return None


SETTLE_S = 10.0
"""How long a ready or notReady that the operator wrote moments ago is watched before it is taken as its verdict:
two of the operator's 5-second re-checks (see :func:`turned_not_ready`). Verify re-reads a young notReady for this
long; the rollout holds a ready at most this long before it says so (:data:`wizard.cluster.rollouts.rollout.QUIET_S`)."""


def turned_not_ready(
    policy: Mapping[str, Any] | None, drivers: list[dict[str, Any]], now: datetime, within: float
) -> str:
    """The ClusterPolicy or NVIDIADriver that turned ``notReady`` less than ``within`` seconds ago, in words ("" none).

    The operator re-checks a notReady policy every 5 s, and one pass that lands while an operand's pod
    restarts writes notReady for that pass only (the real operator did, one second after a ready the
    rollout had confirmed). A state that young is not yet a verdict; one that has held longer is.
    A stamp ahead of ``now`` (a clock behind the server's) counts as young.
    """
    for obj in [policy, *drivers] if policy is not None else drivers:
        if str((obj.get("status") or {}).get("state") or "") != "notReady":
            continue
        age = _age(obj, now)
        if age is not None and age < within:
            name = str((obj.get("metadata") or {}).get("name") or "?")
            return f"{name} turned notReady {max(age, 0.0):.0f} s ago"
    return ""


#: Driver fields that decide the image a node runs, with the operator's default when the live object omits one
#: (None: the operator's own image default, which only the operator knows: an omitted one is not compared).
DRIVER_FIELDS: dict[str, Any] = {
    "enabled": True,
    "usePrecompiled": False,
    "useNvidiaDriverCRD": False,
    "repository": None,
    "image": None,
    "version": None,
}


def _differs(live: Mapping[str, Any], planned: Mapping[str, Any], key: str) -> bool:
    default = DRIVER_FIELDS.get(key)
    if key not in planned or (default is None and key not in live):
        return False
    return bool(live.get(key, default) != planned[key])


def plan_held(
    planned_policy: Mapping[str, Any],
    planned_drivers: list[dict[str, Any]],
    policy: Mapping[str, Any] | None,
    drivers: list[dict[str, Any]],
) -> Check | None:
    """A FAIL naming what the live objects still ask for when they do not hold the plan's driver (None when
    they do): verifying a plan that was never applied compares every node with images nobody asked for.

    Only the fields that decide a node's driver image count (a new upgrade policy changes none). A
    Helm-owned policy gets the ``helm upgrade`` as the thing to run first (the change goes through it).
    """
    from wizard.engine.ownership import ownership_of

    if policy is None:
        return None  # policy_checks says there is none
    planned = (planned_policy.get("spec") or {}).get("driver") or {}
    live = (policy.get("spec") or {}).get("driver") or {}
    # a plan without the operator's driver (pre-installed) decides no image: only `enabled` counts
    fields = [k for k in DRIVER_FIELDS if k == "enabled"] if planned.get("enabled") is False else list(DRIVER_FIELDS)
    differ = [(key, live.get(key, DRIVER_FIELDS[key]), planned[key]) for key in fields if _differs(live, planned, key)]
    if not differ and planned.get("useNvidiaDriverCRD"):
        by_name = {str(d["metadata"]["name"]): d.get("spec") or {} for d in drivers}
        for wanted in planned_drivers:
            name = str(wanted["metadata"]["name"])
            have = by_name.get(name)
            if have is None:
                differ.append((f"NVIDIADriver {name}", "(none)", "created"))
                continue
            for key in ("repository", "image", "version", "usePrecompiled"):
                if _differs(have, wanted["spec"], key):
                    differ.append((f"NVIDIADriver {name} {key}", have.get(key, ""), wanted["spec"][key]))
    if not differ:
        return None
    name = policy["metadata"]["name"]
    key, had, wants = next((d for d in differ if d[0] == "version"), differ[0])
    said = f"driver {had}" if key == "version" else f"{key} {had!s}"
    owner = ownership_of(policy)
    if owner.helm:
        hint = (
            f"run the `helm upgrade` of release {owner.release} that carries the plan's values first (the Apply "
            "step's Save Helm values, or gpu-wizard apply, writes them), then verify again"
        )
    else:
        hint = "apply the plan first (the Apply step, or gpu-wizard apply --answers FILE), then verify again"
    return Check(
        "plan-applied",
        Status.FAIL,
        f"the live ClusterPolicy {name} still asks for {said}, the plan for {wants}: the plan is not applied yet",
        hint=hint,
        data={"differs": [{"field": k, "live": str(h), "plan": str(w)} for k, h, w in differ]},
    )
