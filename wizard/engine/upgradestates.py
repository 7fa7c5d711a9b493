"""The driver upgrade state machine of the GPU Operator, summarised for people watching a rollout.

The operator's upgrade controller walks each GPU node through the ``nvidia.com/gpu-driver-upgrade-state``
label's values (upgrade-required → cordon-required → … → upgrade-done, or upgrade-failed). A rollout
follower knows each node's state and how long it has been in it; this module turns that into what a
person can read at any node count: one summary per state (how many nodes, the longest time in it, the
nodes that entered it first), and the nodes stuck in one state longer than a window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

UPGRADE_REQUIRED = "upgrade-required"
"""The state that starts a node's upgrade (the operator's node labeller sets it for a driver pod left without owner)."""
UPGRADE_DONE = "upgrade-done"
UPGRADE_FAILED = "upgrade-failed"
#: The states in the order a node passes through them (the operator's upgrade controller).
UPGRADE_STATES = (
    UPGRADE_REQUIRED,
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "drain-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    UPGRADE_DONE,
    UPGRADE_FAILED,
)
#: States a node rests in once its upgrade is over: being there for a long time is not being stuck.
SETTLED_STATES = frozenset({UPGRADE_DONE, UPGRADE_FAILED, ""})
_ORDER = {state: index for index, state in enumerate(UPGRADE_STATES)}


@dataclass(frozen=True)
class StateSummary:
    """The nodes in one upgrade state."""

    state: str
    count: int
    longest: float
    """Seconds the longest-waiting node has been in this state."""
    oldest: tuple[str, ...]
    """The nodes longest in this state (at most the number asked for), longest first."""


@dataclass(frozen=True)
class StuckNode:
    """A node that has been in one unsettled upgrade state for longer than the window."""

    node: str
    state: str
    seconds: float


def summarize(states: Mapping[str, str], seconds: Mapping[str, float], *, oldest: int = 3) -> list[StateSummary]:
    """One :class:`StateSummary` per state present, in the state machine's order (unknown states last, by name)."""
    by_state: dict[str, list[str]] = {}
    for node, state in states.items():
        by_state.setdefault(state, []).append(node)
    summaries = []
    for state, nodes in by_state.items():
        nodes.sort(key=lambda n: (-seconds.get(n, 0.0), n))
        longest = seconds.get(nodes[0], 0.0)
        summaries.append(StateSummary(state, len(nodes), longest, tuple(nodes[:oldest])))
    return sorted(summaries, key=lambda s: (_ORDER.get(s.state, len(_ORDER)), s.state))


def stuck_nodes(states: Mapping[str, str], seconds: Mapping[str, float], window: float) -> list[StuckNode]:
    """Nodes in an unsettled state for more than ``window`` seconds, longest first."""
    stuck = [
        StuckNode(node, state, seconds[node])
        for node, state in states.items()
        if state not in SETTLED_STATES and seconds.get(node, 0.0) > window
    ]
    return sorted(stuck, key=lambda s: (-s.seconds, s.node))


def duration_text(seconds: float) -> str:
    """``0.4s``, ``42s``, ``3m 05s``, ``1h 02m``: a time in state for one line."""
    if seconds < 10:
        return f"{max(0.0, seconds):.1f}s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
