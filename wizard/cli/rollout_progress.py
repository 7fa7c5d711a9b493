"""How ``gpu-wizard apply`` and ``upgrade`` show a rollout they follow: its phase, and each GPU node's
driver upgrade state (``nvidia.com/gpu-driver-upgrade-state``) with the time the node has been in it.

* Few nodes (at most :data:`PER_NODE` carry the upgrade label): a line per node whenever its state
  changes, with the time it spent in the state it left; the phase line whenever it changes.
* More: a summary per state (how many nodes, the longest time in it, the :data:`OLDEST` nodes longest
  in it) under the phase line, at most once per ``refresh`` seconds (and when the phase changes or the
  rollout ends), never a line per node per change: a 5,000-node upgrade makes tens of thousands.
* A node in one unsettled state for longer than the stall window is named once, with state and time.
* ``-o json``: at the same moments one JSON object per line on stdout, ``{"rollout": {…}}``, with the
  phase, the per-state summary, the stuck nodes and every labelled node's state and seconds in it.

Text goes to stderr (stdout carries the diff or the JSON). Node names are untrusted: made printable.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from wizard.engine.textsafe import printable
from wizard.engine.upgradestates import StateSummary, StuckNode, duration_text, stuck_nodes, summarize

if TYPE_CHECKING:
    from wizard.cluster.facade import RolloutStatus

PER_NODE = 10
"""Up to this many nodes in an upgrade, each node's state changes are printed; above, a summary per state."""
REFRESH = 10.0
"""Seconds between two summaries (and JSON lines) while the phase stays the same."""
OLDEST = 3
"""Nodes named per state in a summary: the ones that have been in it longest."""
NAMED_STUCK = 5
"""Stuck nodes named at one time; the rest are counted."""


class RolloutPrinter:
    """Turns the follower's snapshots into throttled lines (and JSON lines); :meth:`show` each snapshot."""

    def __init__(
        self,
        err: TextIO,
        *,
        stall_window: float,
        json_out: TextIO | None = None,
        refresh: float = REFRESH,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.err, self.json_out = err, json_out
        self.stall_window, self.refresh, self.clock = stall_window, refresh, clock
        self._phase_line = ""
        self._phase = ""
        self._emitted_at: float | None = None
        self._states: dict[str, tuple[str, float]] = {}
        """Node -> (state, when it entered it on this printer's clock), for the time spent in a state a node leaves."""
        self._named_stuck: set[tuple[str, str]] = set()

    def show(self, status: RolloutStatus) -> None:
        """Print what this snapshot adds, if it is time to."""
        now = self.clock()
        many = len(status.upgrade_states) > PER_NODE
        due = status.done or self._emitted_at is None or now - self._emitted_at >= self.refresh
        line = f"rollout: {status.phase}: {printable(status.message)}"
        text: list[str] = []
        if many:
            if due or status.phase != self._phase:
                text += [f"{line}  [{duration_text(status.elapsed)}]\n", *summary_lines(status)]
        else:
            if line != self._phase_line:
                text.append(line + "\n")
            text += self._node_changes(status, now)
        text += self._stuck_lines(status)
        self._remember_states(status, now)
        self._phase_line, self._phase = line, status.phase
        if text:
            self.err.write("".join(text))
            self.err.flush()
        if self.json_out is not None and (text or due):
            self.json_out.write(json.dumps({"rollout": rollout_json(status, self.stall_window)}) + "\n")
            self.json_out.flush()
        if text or due:
            self._emitted_at = now

    def _remember_states(self, status: RolloutStatus, now: float) -> None:
        known = self._states
        self._states = {}
        for node, state in status.upgrade_states.items():
            seen = known.get(node)
            entered = now - status.time_in_state.get(node, 0.0)
            self._states[node] = seen if seen is not None and seen[0] == state else (state, entered)

    def _node_changes(self, status: RolloutStatus, now: float) -> list[str]:
        lines = []
        for node, state in sorted(status.upgrade_states.items()):
            before, entered = self._states.get(node, ("", 0.0))
            if state == before:
                continue
            name = printable(node)
            if before:
                spent = duration_text(now - status.time_in_state.get(node, 0.0) - entered)
                lines.append(f"  node {name}: {before} → {state} (after {spent} in {before})\n")
            else:
                seconds = status.time_in_state.get(node, 0.0)
                lines.append(f"  node {name}: {state or 'no upgrade state'} (for {duration_text(seconds)})\n")
        return lines

    def _stuck_lines(self, status: RolloutStatus) -> list[str]:
        stuck = [
            s
            for s in stuck_nodes(status.upgrade_states, status.time_in_state, self.stall_window)
            if (s.node, s.state) not in self._named_stuck
        ]
        lines = [
            f"! node {printable(entry.node)} has been in {entry.state} for {duration_text(entry.seconds)} "
            f"(longer than the stall window, {duration_text(self.stall_window)})\n"
            for entry in stuck[:NAMED_STUCK]
        ]
        if len(stuck) > NAMED_STUCK:
            lines.append(f"! and {len(stuck) - NAMED_STUCK} more node(s) in one upgrade state that long\n")
        self._named_stuck |= {(s.node, s.state) for s in stuck}
        return lines


def summary_lines(status: RolloutStatus) -> list[str]:
    """The per-state block under a phase line: state, count, longest time in it, the nodes longest there."""
    summaries = summarize(status.upgrade_states, status.time_in_state, oldest=OLDEST)
    lines = [f"  upgrade states of {len(status.upgrade_states):,} node(s):\n"]
    for entry in summaries:
        lines.append(_summary_line(entry))
    return lines


def _summary_line(entry: StateSummary) -> str:
    state = entry.state or "(no state)"
    head = f"    {state:24s} {entry.count:>7,}"
    if entry.state in ("upgrade-done", ""):
        return head + "\n"
    names = ", ".join(printable(n) for n in entry.oldest) + (" …" if entry.count > len(entry.oldest) else "")
    return f"{head}  longest {duration_text(entry.longest):>7s}  {names}\n"


def rollout_json(status: RolloutStatus, stall_window: float) -> dict[str, Any]:
    """The snapshot as ``-o json`` carries it: phase, per-state summary, stuck nodes, every node's state and time."""
    stuck: list[StuckNode] = stuck_nodes(status.upgrade_states, status.time_in_state, stall_window)
    return {
        "phase": status.phase,
        "message": status.message,
        "done": status.done,
        "elapsed_s": round(status.elapsed, 1),
        "states": [
            {"state": s.state, "count": s.count, "longest_s": round(s.longest, 1), "oldest": list(s.oldest)}
            for s in summarize(status.upgrade_states, status.time_in_state, oldest=OLDEST)
        ],
        "stuck": [{"node": s.node, "state": s.state, "seconds": round(s.seconds, 1)} for s in stuck],
        "stall_window_s": stall_window,
        "nodes": {
            node: {"state": state, "seconds": round(status.time_in_state.get(node, 0.0), 1)}
            for node, state in sorted(status.upgrade_states.items())
        },
        "causes": list(status.causes),  # found before apply: each node's host finding and its fix
    }
