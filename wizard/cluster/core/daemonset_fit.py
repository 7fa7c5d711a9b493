"""How many nodes a DaemonSet should run a pod on, by the DaemonSet controller's own rules, from slim nodes.

The rollout follower compares it with the controller's ``desiredNumberScheduled``: right after the
operator labels the GPU nodes (``nvidia.com/gpu.deploy.*``) and creates its DaemonSets, the controller
may count a DaemonSet before it has seen the labels (0 or too few pods wanted); the operator then
counts that DaemonSet ready and may say ``ready`` before a pod runs. Counting the nodes that fit
tells the follower that more pods are still to come.

A node fits when its labels hold the pod template's ``nodeSelector`` and every ``NoSchedule`` and
``NoExecute`` taint on it is tolerated, by the template or by the tolerations the controller adds to
every DaemonSet pod. Where the answer cannot be known from the labels kept (node affinity, a selector
on a label the slim node does not keep), :meth:`Placements.nodes_to_run` says None and the follower judges the
DaemonSet by its counters alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

KEPT_PREFIXES = ("nvidia.com/",)
KEPT_LABELS = frozenset(
    {
        "feature.node.kubernetes.io/kernel-version.full",  # precompiled: one DaemonSet per kernel
        "feature.node.kubernetes.io/system-os_release.ID",  # NVIDIADriver: one DaemonSet per OS
        "feature.node.kubernetes.io/system-os_release.VERSION_ID",
        "feature.node.kubernetes.io/pci-10de.present",  # NFD's NVIDIA PCI labels: a GPU node to the operator
        "feature.node.kubernetes.io/pci-0302_10de.present",
        "feature.node.kubernetes.io/pci-0300_10de.present",
    }
)
#: Taints every DaemonSet pod tolerates (the controller adds these tolerations itself).
DAEMONSET_TOLERATED = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
        "node.kubernetes.io/network-unavailable",
    }
)


def kept_label(key: str) -> bool:
    return key in KEPT_LABELS or key.startswith(KEPT_PREFIXES)


def slim_scheduling(node: dict[str, Any]) -> dict[str, Any]:
    """What placement reads of a node: the labels kept and its ``NoSchedule``/``NoExecute`` taints."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    taints = [
        {"key": t.get("key"), "value": t.get("value"), "effect": t.get("effect")}
        for t in (node.get("spec") or {}).get("taints") or []
        if isinstance(t, dict) and t.get("effect") in ("NoSchedule", "NoExecute")
    ]
    return {"labels": {k: v for k, v in labels.items() if kept_label(k)}, "taints": taints}


def _tolerates(toleration: dict[str, Any], taint: dict[str, Any]) -> bool:
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if toleration.get("operator") == "Exists":
        return not key or key == taint.get("key")
    return key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or "")


def _fits(node: dict[str, Any], selector: dict[str, str], tolerations: list[dict[str, Any]]) -> bool:
    labels = node.get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    for taint in node.get("taints") or []:
        if taint.get("key") in DAEMONSET_TOLERATED:
            continue
        if not any(_tolerates(t, taint) for t in tolerations if isinstance(t, dict)):
            return False
    return True


class Placements:
    """Nodes grouped by what places pods on them (their kept labels and taints): thousands of GPU nodes are
    a few dozen kinds, so counting the nodes of a DaemonSet reads each kind once (a short loop turn)."""

    def __init__(self, nodes: Iterable[dict[str, Any]]) -> None:
        kinds: Counter[tuple[tuple[tuple[str, str], ...], tuple[tuple[Any, Any, Any], ...]]] = Counter()
        first: dict[tuple[Any, ...], str] = {}
        for n in nodes:
            kind = (
                tuple(sorted((n.get("labels") or {}).items())),
                tuple((t["key"], t["value"], t["effect"]) for t in n.get("taints") or []),
            )
            kinds[kind] += 1
            first.setdefault(kind, str((n.get("metadata") or {}).get("name") or ""))
        self.kinds = [
            ({"labels": dict(labels), "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints]}, count)
            for (labels, taints), count in kinds.items()
        ]
        self.labels: list[dict[str, str]] = [dict(labels) for labels, _ in kinds]
        self.first_names = [first[kind] for kind in kinds]

    def nodes_to_run(self, daemonset: dict[str, Any]) -> int | None:
        """How many nodes the DaemonSet's pods belong on; None: unknown from what is kept (node affinity, a
        selector on a label the slim nodes drop)."""
        placement = _placement(daemonset)
        if placement is None:
            return None
        return sum(count for node, count in self.kinds if _fits(node, *placement))

    def unplaced(
        self, daemonsets: Iterable[dict[str, Any]], wanted: Callable[[dict[str, str]], bool]
    ) -> tuple[int, str] | None:
        """The nodes ``wanted`` picks (by their kept labels) that none of the DaemonSets places a pod on, as (how
        many, one of their names); None when every one is placed, or when a DaemonSet's placement cannot be known
        from what is kept (then nothing can be said)."""
        placements = []
        for daemonset in daemonsets:
            placement = _placement(daemonset)
            if placement is None:
                return None
            placements.append(placement)
        left = [
            (count, name)
            for (node, count), labels, name in zip(self.kinds, self.labels, self.first_names, strict=True)
            if wanted(labels) and not any(_fits(node, *p) for p in placements)
        ]
        return (sum(count for count, _ in left), left[0][1]) if left else None


def _placement(daemonset: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]] | None:
    """A DaemonSet's pod template's node selector and tolerations; None when its placement cannot be known from
    the labels kept (node affinity, a selector on a label the slim nodes drop)."""
    pod = (((daemonset.get("spec") or {}).get("template") or {}).get("spec")) or {}
    if (pod.get("affinity") or {}).get("nodeAffinity"):
        return None
    selector = {str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()}
    if not all(kept_label(k) for k in selector):
        return None
    return selector, list(pod.get("tolerations") or [])
