"""The slim objects the rollout follower's watch caches keep of 5,000 nodes' pods and nodes.

The follower's five kinds each live in the one watch cache (:class:`wizard.cluster.core.watchcache.WatchCache`:
paged list, watch, relist on 410, time slices). Each object is cut down as it enters (:func:`slim_pod`,
:func:`slim_node`, :func:`without_managed_fields`) to what :mod:`wizard.cluster.rollouts.rollout` reads of it, and
the pods that wait for a reason worth showing (:func:`waiting_pods`) are indexed
(:func:`waiting_entries`), so a snapshot reads a few entries instead of every pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.cluster.core.daemonset_fit import slim_scheduling
from wizard.engine.leftovers import DRIVER_COMPONENT, LABEL_COMPONENT

PROBE_PREFIX = "gpu-wizard-probe-"
STARTING = ("PodInitializing", "ContainerCreating")
"""The waiting reasons of a normal start-up (not worth showing)."""


@dataclass(frozen=True)
class PodStatus:
    """One operand container that is waiting (image pull, crash loop…)."""

    name: str
    node: str
    phase: str
    reason: str = ""
    message: str = ""
    container: str = ""
    image: str = ""
    """The image the waiting container runs or pulls."""
    restarts: int = 0
    """The container's restart count: one that has failed before (a host found unfit before apply fails the rollout
    on its first restart, :func:`wizard.cluster.rollouts.rollout_verdict.known_failure`)."""


def waiting_pods(pod: dict[str, Any]) -> list[PodStatus]:
    """The containers of one pod that wait for a reason worth showing (not the normal start-up), and those that have
    restarted (no ``reason``: running again, or starting again, after a failure)."""
    meta, status = pod["metadata"], pod.get("status") or {}
    if str(meta.get("name") or "").startswith(PROBE_PREFIX):
        return []
    node, phase = str((pod.get("spec") or {}).get("nodeName") or ""), str(status.get("phase") or "")
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        restarts = int(cs.get("restartCount") or 0)
        if reason in STARTING:
            reason = ""
        if reason or restarts:
            out.append(
                PodStatus(
                    meta["name"],
                    node,
                    phase,
                    reason,
                    str(waiting.get("message") or "") if reason else "",
                    str(cs.get("name") or ""),
                    str(cs.get("image") or "") if reason else "",
                    restarts,
                )
            )
    return out


def _slim_container_status(cs: dict[str, Any]) -> dict[str, Any]:
    waiting = (cs.get("state") or {}).get("waiting")
    slim: dict[str, Any] = {"name": cs.get("name")}
    if cs.get("restartCount"):
        slim["restartCount"] = cs.get("restartCount")
    if waiting:
        slim["state"] = {"waiting": {"reason": waiting.get("reason"), "message": waiting.get("message")}}
        if cs.get("image") and waiting.get("reason") not in STARTING:  # what waiting_pods reports names its image
            slim["image"] = cs.get("image")
    return slim


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """What :func:`waiting_pods` reads of a pod: its name, node, phase and the waiting containers' reasons and
    images."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    slim_status: dict[str, Any] = {"phase": status.get("phase")}
    for key in ("initContainerStatuses", "containerStatuses"):
        if status.get(key):
            slim_status[key] = [_slim_container_status(cs) for cs in status[key]]
    slim_meta: dict[str, Any] = {"name": meta.get("name")}
    if not meta.get("ownerReferences") and (meta.get("labels") or {}).get(LABEL_COMPONENT) == DRIVER_COMPONENT:
        slim_meta["orphanedDriver"] = True  # a driver pod no DaemonSet owns (wizard.cluster.rollouts.orphans)
    return {
        "metadata": slim_meta,
        "spec": {"nodeName": (pod.get("spec") or {}).get("nodeName")},
        "status": slim_status,
    }


def slim_node(node: dict[str, Any]) -> dict[str, Any]:
    """What the follower reads of a node: its name, its ``nvidia.com/`` labels (the driver upgrade state,
    the operator's deploy labels) and what places DaemonSet pods on it (:mod:`wizard.cluster.core.daemonset_fit`)."""
    return {"metadata": {"name": (node.get("metadata") or {}).get("name")}, **slim_scheduling(node)}


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without ``metadata.managedFields`` (kinds with a handful of objects keep the rest)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta.pop("managedFields")
    return obj


def waiting_entries(pod: dict[str, Any]) -> tuple[PodStatus, ...]:
    """:func:`waiting_pods` as a cache index entry."""
    return tuple(waiting_pods(pod))
