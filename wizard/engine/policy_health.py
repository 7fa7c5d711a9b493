"""What a ClusterPolicy says of itself, in the words every step and command uses (Connect, Verify, the CLI).

``NoGPUNodes`` and ``NFDLabelsMissing`` come with ``state: ready`` and ``Ready=True``; they are not a
working install, since no driver was installed anywhere. A ``notReady`` policy is one whose operands
the operator could not bring up: Connect shows it before anything is planned (issue 25: it showed a
green tick), Verify fails on it after an apply; both through :func:`policy_health`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FALSE_READY_REASONS = frozenset({"NoGPUNodes", "NFDLabelsMissing"})
"""Reasons a policy reports ``ready`` with although it installed nothing."""


def ready_condition(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``Ready`` condition of a ClusterPolicy or NVIDIADriver ({} when absent)."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return dict(next((c for c in conditions if c.get("type") == "Ready"), {}))


@dataclass(frozen=True)
class PolicyHealth:
    """A live ClusterPolicy's state: ready or not, in one line, and what to do when not."""

    ready: bool
    message: str
    hint: str = ""


def policy_health(policy: Mapping[str, Any]) -> PolicyHealth:
    """``cluster-policy ready (Ready)``, ``cluster-policy is notReady: <the operator's error>``, …"""
    name = str((policy.get("metadata") or {}).get("name") or "?")
    status = policy.get("status") or {}
    state = str(status.get("state") or "unknown")
    cond = ready_condition(policy)
    reason, text = str(cond.get("reason") or ""), str(cond.get("message") or "")
    if state == "ready" and reason in FALSE_READY_REASONS:
        return PolicyHealth(
            False,
            f"{name} reports ready but {reason}: {text}".rstrip(": "),
            "the operator sees no usable GPU node: check NFD and the nvidia.com/gpu.present labels",
        )
    if state == "ready":
        return PolicyHealth(True, f"{name} ready ({reason or 'Ready'})")
    errors = [c for c in status.get("conditions") or [] if c.get("type") == "Error" and c.get("status") == "True"]
    detail = (errors[0].get("message") if errors else text) or "no condition message"
    return PolicyHealth(
        False, f"{name} is {state}: {detail}", _not_ready_hint(detail, str(status.get("namespace") or ""))
    )


#: The operator's OperandNotReady message: "ClusterPolicy is not ready, states not ready: [state-driver …]".
_STATES_NOT_READY = re.compile(r"states not ready: \[([^\]]*)\]")


def _not_ready_hint(detail: str, namespace: str) -> str:
    """Where to look: the driver pods when the driver state is among those not ready, else the first state that is
    (a toolkit crash-looping under a pre-installed driver is no driver pod's)."""
    found = _STATES_NOT_READY.search(detail)
    states = found.group(1).split() if found else []
    if not states or "state-driver" in states:
        return "gpu-wizard apply follows the rollout; see the driver pods' events"
    where = f" -n {namespace}" if namespace else ""
    return f"{states[0]} is the first state not ready (not the driver): see its pods' events (kubectl get pods{where})"
