"""Results of the node-side path checks: one row per node, then each distinct problem with what to do.

Fed with ``wizard.engine.results.Check`` objects from ``Cluster.check_paths`` as they arrive: a
``toolkit-dir`` and a ``driver-dir`` check per node (``data["short"]`` fills the table cell) and a
final ``summary``. Nodes with the same problem share one explanation and one hint, so a thousand
nodes with a ``noexec`` ``/run`` read as one finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.markup import escape
from textual.widgets import Static

_STYLE = {"pass": "$success", "fail": "$error", "warn": "$warning", "skipped": "$text-muted", "running": "$accent"}
COLUMNS = (("toolkit-dir", "toolkit installDir"), ("driver-dir", "driverInstallDir"))
NODE_WIDTH = 16
CELL_WIDTH = 28
SHOWN_NODES = 3


def _status(check: Any) -> str:
    return str(getattr(check.status, "value", check.status))


def _cell(check: Any | None) -> str:
    """``✓ writable, exec`` in the status colour, padded to the column."""
    if check is None:
        return " " * CELL_WIDTH
    text = str(check.data.get("short") or check.message)[: CELL_WIDTH - 3]
    pad = " " * (CELL_WIDTH - 2 - len(text))
    return f"[{_STYLE.get(_status(check), '$text')}]{check.status.symbol} {escape(text)}[/]{pad}"


def _nodes(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN_NODES} more" if len(names) > SHOWN_NODES else ""
    return ", ".join(names[:SHOWN_NODES]) + more


class PathResults(Static):
    """The node × folder table and, under it, the summary and each distinct problem with its hint."""

    DEFAULT_CSS = """
    PathResults { height: auto; }
    """

    def show(self, checks: Iterable[Any], empty: str = "") -> None:
        """Replace the view with ``checks`` (``wizard.engine.results.Check``)."""
        rows: dict[str, dict[str, Any]] = {}
        problems: dict[tuple[str, str, str, str], list[str]] = {}
        general: list[Any] = []
        for check in checks:
            if not (check.node and check.check in dict(COLUMNS)):
                general.append(check)  # the summary, a node-less skip
                continue
            rows.setdefault(check.node, {})[check.check] = check
            if _status(check) in ("fail", "warn"):
                key = (_status(check), check.check, check.message, check.hint)
                problems.setdefault(key, []).append(check.node)
        if not rows and not general:
            self.update(empty)
            return
        lines: list[str] = []
        if rows:
            header = "".join(title.ljust(CELL_WIDTH) for _, title in COLUMNS)
            lines.append(f"[b]{'node'.ljust(NODE_WIDTH)}{header}[/]".rstrip())
            for node in sorted(rows):
                cells = "".join(_cell(rows[node].get(name)) for name, _ in COLUMNS)
                lines.append(f"{escape(node[: NODE_WIDTH - 1]).ljust(NODE_WIDTH)}{cells}".rstrip())
        for check in general:
            style = _STYLE.get(_status(check), "$text")
            name = "" if check.check == "summary" else f"[b]{escape(check.check)}:[/] "
            lines.append(f"[{style}]{check.status.symbol} [/]{name}{escape(check.message)}")
            if check.hint and _status(check) in ("fail", "warn"):
                lines.append(f"   [$text-muted]→ {escape(check.hint)}[/]")
        for (status, name, message, hint), nodes in problems.items():
            style = _STYLE.get(status, "$text")
            symbol = "✗" if status == "fail" else "!"
            where = escape(_nodes(sorted(nodes)))
            lines.append(f"[{style}]{symbol} [/][b]{escape(name)}[/] on {where}: {escape(message)}")
            if hint:
                lines.append(f"   [$text-muted]→ {escape(hint)}[/]")
        self.update("\n".join(lines))
