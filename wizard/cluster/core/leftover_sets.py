"""The live side of :mod:`wizard.engine.leftovers`: the operator namespace's DaemonSets as the rule reads them.

The preview (:mod:`wizard.cluster.applying.apply_preview`) lists them once and keeps the ones the operator leaves
behind for the plan, which :mod:`wizard.cluster.applying.apply` backs up and deletes after the policy's write; the
rollout (:mod:`wizard.cluster.rollouts.rollout`) judges its cached DaemonSets with the same rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from wizard.cluster.errors import ApiError
from wizard.cluster.gateway import Gateway
from wizard.engine.leftovers import LiveDaemonSet, Unwanted, left_behind, unwanted
from wizard.engine.plan import Plan


def live_daemonset(daemonset: Mapping[str, Any]) -> LiveDaemonSet:
    """A DaemonSet object as the rule reads it: name, labels, controlling owner's kind, pods it runs now."""
    meta = daemonset.get("metadata") or {}
    status = daemonset.get("status") or {}
    owners = [r for r in meta.get("ownerReferences") or [] if isinstance(r, dict)]
    owner = next((r for r in owners if r.get("controller")), owners[0] if owners else {})
    pods = max(int(status.get("currentNumberScheduled") or 0), int(status.get("numberReady") or 0))
    return LiveDaemonSet(
        name=str(meta.get("name") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        owner_kind=str(owner.get("kind") or ""),
        pods=pods,
        uid=str(meta.get("uid") or ""),
    )


def policy_uses_nvidia_driver_crd(policy: Mapping[str, Any] | None) -> bool:
    """A ClusterPolicy's ``driver.useNvidiaDriverCRD``."""
    return bool((((policy or {}).get("spec") or {}).get("driver") or {}).get("useNvidiaDriverCRD"))


def judge(plan: Plan, daemonsets: Iterable[Mapping[str, Any]], policy: Mapping[str, Any] | None) -> list[Unwanted]:
    """The driver DaemonSets the plan does not want, judged against ``policy`` (the ClusterPolicy as applied)."""
    live = [live_daemonset(d) for d in daemonsets]
    return unwanted(plan, live, nvidia_driver_crd=policy_uses_nvidia_driver_crd(policy))


async def find_left_behind(
    gateway: Gateway, plan: Plan, namespace: str, policy: Mapping[str, Any] | None
) -> tuple[list[Unwanted], dict[str, dict[str, Any]]]:
    """The DaemonSets the operator leaves behind once ``policy`` (the server's dry-run answer) is applied, and
    their live objects by name. A user who may not list DaemonSets gets none (the rollout still says so)."""
    if not namespace:
        return [], {}
    try:
        listed = await gateway.list_daemonsets(namespace)
    except ApiError as exc:
        if exc.status in (401, 403):
            return [], {}
        raise
    by_name = {str(d["metadata"]["name"]): d for d in listed}
    live = [live_daemonset(d) for d in listed]
    left = left_behind(plan, live, nvidia_driver_crd=policy_uses_nvidia_driver_crd(policy))
    return left, {u.name: by_name[u.name] for u in left}
