"""The Apply step's rollout: the operator's verdict, one line per distinct pod problem, the advice, the rows.

Shown from ``Cluster.rollout``'s snapshots (many a second at 5,000 nodes): the head is one Static, and
the DaemonSets, nodes' upgrade states and NVIDIADrivers are rows of a
:class:`~screens.widgets.rowtable.RowTable`, which draws only the lines on screen.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from screens.widgets.rowtable import RowTable


class RolloutView(Vertical):
    """The rollout's state (``not started`` until one is followed) and its table."""

    DEFAULT_CSS = """
    RolloutView { height: auto; }
    RolloutView > #rollout-state { height: auto; margin-top: 1; }
    RolloutView > #rollout-table { height: auto; max-height: 8; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown: dict[str, tuple[str, str]] = {}
        """The rows on the table now, by key, in order."""

    def compose(self) -> ComposeResult:
        yield Static("not started", id="rollout-state")
        yield RowTable(id="rollout-table", cursor=False)

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.add_column("Node / DaemonSet", key="what")
        table.add_column("State", key="state")

    def say(self, markup: str) -> None:
        """A line instead of a rollout (``not started``, ``… backing up and applying``); the rows go."""
        self.query_one("#rollout-state", Static).update(markup)
        self.query_one(RowTable).clear()
        self._shown = {}

    def show(self, status: Any, *, sent: bool, advice: list[str]) -> None:
        """One snapshot; ``sent``: this visit's apply started it (else it is the live objects' own rollout),
        ``advice``: markup lines said under a failed one."""
        style = {"ready": "$success", "failed": "$error", "progressing": "$accent"}.get(status.phase, "$text-muted")
        head = f"[{style}]{escape(status.phase)}[/]  {escape(status.message)}"
        if status.policy_state:
            head += f"  [$text-muted](ClusterPolicy {escape(status.policy_state)})[/]"
        problems: dict[tuple[str, str], list[str]] = {}
        for pod in status.pods:  # one line per distinct problem, not one per pod repeating the image
            if pod.reason:
                message = "" if pod.message and pod.message in status.message else pod.message
                problems.setdefault((pod.reason, message), []).append(pod.node)
        for (reason, message), nodes in problems.items():
            where = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
            head += f"\n[$warning]! {escape(where)}: {escape(reason)}[/] {escape(message)}".rstrip()
        for cause in getattr(status, "causes", ()):  # found before apply: the node's finding and its fix
            head += f"\n[$error]✗[/] {escape(cause)}"
        if not sent:
            head = (
                "[$text-muted]nothing sent: the rollout of the live objects, which already ask for these images[/]\n"
                + head
            )
        if status.phase == "failed" and advice:
            head += "\n" + "\n".join(advice)
        self.query_one("#rollout-state", Static).update(head)

        # every row again, in one go: the RowTable draws only the lines on screen, so 5,000 nodes'
        # upgrade states cost list appends per status, not a DataTable measuring 5,000 rows
        rows: list[tuple[str, tuple[str, str]]] = []
        for ds in status.daemonsets:
            mark = "✓" if ds.done else "…"
            name = "ds/" + ds.name.removeprefix("nvidia-driver-daemonset-")
            name = name if len(name) <= 48 else name[:47] + "…"
            rows.append((f"ds:{ds.name}", (name, f"{mark} {ds.ready}/{ds.desired} ready, {ds.updated} updated")))
        rows += [(f"node:{name}", (name, value)) for name, value in sorted(status.upgrade_states.items())]
        rows += [
            (f"nvd:{name}", (f"NVIDIADriver/{name}", value)) for name, value in sorted(status.nvidia_drivers.items())
        ]
        self._rows(rows)

    def _rows(self, rows: list[tuple[str, tuple[str, str]]]) -> None:
        """The rows of a snapshot: the same rows as the last one's update only the cells that changed (a snapshot
        of 5,000 nodes rebuilt whole was 60 ms of the loop per snapshot); other rows replace them all."""
        table = self.query_one(RowTable)
        shown = self._shown
        self._shown = dict(rows)
        if list(shown) != list(self._shown):  # other rows, or in another order
            table.clear()
            table.add_rows(rows)
            return
        for key, (what, state) in rows:
            if shown[key] != (what, state):
                table.update_cell(key, "what", what)
                table.update_cell(key, "state", state)
