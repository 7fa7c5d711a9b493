"""Driver pods left without an owner when ``useNvidiaDriverCRD`` turns on, and the nodes the operator forgot.

The ClusterPolicy deletes its driver DaemonSets orphaning their pods; the NVIDIADriver's pods cannot start beside
them (their anti-affinity), and the operator's upgrade controller replaces an orphaned pod only on a node marked
``upgrade-required``, which its node labeller misses when the NVIDIADriver's pods were created before the old pods
lost their owner (:func:`wizard.engine.leftovers.unmarked_orphans`). The rollout follower gives the labeller
:data:`GRACE_S` to do it, then marks such a node itself, as the labeller would: the upgrade controller then
replaces the pod under the plan's upgrade policy (cordon, drain when asked, restart), as it does after any driver
change. Nothing else is written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import LABEL_UPGRADE_STATE
from wizard.engine.leftovers import unmarked_orphans
from wizard.engine.textsafe import shell_command
from wizard.engine.upgradestates import UPGRADE_REQUIRED

GRACE_S = 20.0
"""How long a node with an orphaned driver pod may stay unmarked before the follower marks it (the operator's
labeller, when it runs, marks it within a second)."""


def orphaned_driver_pods(pods: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node -> the running driver pod there that no DaemonSet owns (from the follower's slim pods)."""
    out: dict[str, str] = {}
    for pod in pods:
        meta, node = pod.get("metadata") or {}, (pod.get("spec") or {}).get("nodeName")
        if meta.get("orphanedDriver") and node and (pod.get("status") or {}).get("phase") == "Running":
            out[str(node)] = str(meta.get("name"))
    return out


class OrphanMarker:
    """Marks, once each, the nodes whose orphaned driver pod the operator left unmarked for :data:`GRACE_S`."""

    def __init__(self, gateway: Gateway, grace: float | None = None) -> None:
        self.gateway, self.grace = gateway, GRACE_S if grace is None else grace
        self.seen: dict[str, float] = {}
        self.marked: dict[str, str] = {}
        """Node -> the orphaned pod it was marked for."""
        self.refused: dict[str, str] = {}
        """Node -> why the mark could not be written."""

    async def mark(self, pods: Iterable[Mapping[str, Any]], upgrade_states: Mapping[str, str]) -> None:
        """Mark the nodes that have waited their grace (the first sight of each starts its clock)."""
        now = time.monotonic()
        waiting = unmarked_orphans(orphaned_driver_pods(pods), upgrade_states)
        self.seen = {node: self.seen.get(node, now) for node in waiting}
        for node, pod in waiting.items():
            if node not in self.marked and node not in self.refused and now - self.seen[node] >= self.grace:
                try:
                    await self.gateway.patch_node_labels(node, {LABEL_UPGRADE_STATE: UPGRADE_REQUIRED})
                except ClusterError as exc:  # no patch on nodes (RBAC), the node gone: said, not retried
                    self.refused[node] = exc.message
                    continue
                self.marked[node] = pod

    def words(self) -> str:
        """What the follower did, for the rollout's message ("" when nothing)."""
        said = []
        if self.marked:
            said.append(
                f"marked {', '.join(sorted(self.marked))} {LABEL_UPGRADE_STATE}={UPGRADE_REQUIRED}: its old driver pod "
                "had no owner and the operator had not marked it, so its upgrade controller replaces it"
            )
        for node, why in sorted(self.refused.items()):
            command = shell_command(["kubectl", "label", "node", node, f"{LABEL_UPGRADE_STATE}={UPGRADE_REQUIRED}"])
            said.append(
                f"{node} keeps a driver pod with no owner that the operator has not marked for replacement, and "
                f"marking it failed ({why}): {command} --overwrite"
            )
        return "; ".join(said)
