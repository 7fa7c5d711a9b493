"""Results of the node-side path checks: the summary and each distinct problem, then one table row per node.

Fed with ``wizard.engine.results.Check`` objects from ``Cluster.check_paths`` as they arrive: a
``toolkit-dir`` and a ``driver-dir`` check per node (``data["short"]`` fills the table cell) and a
final ``summary``. Nodes with the same problem share one explanation and one hint, so a thousand
nodes with a ``noexec`` ``/run`` read as one finding.

Built for 5,000 nodes: :meth:`PathResults.add` only queues a check; the queue is drawn at most
:data:`FLUSH_INTERVAL` apart (new rows added to the table in one batch, cells of known rows updated),
and the table is a :class:`~screens.widgets.rowtable.RowTable`, which draws only the rows on screen
(adding 5,000 rows is 5,000 list appends, not 5,000 measured rows). The findings sit above the
table so they are seen without scrolling past every node.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual.app import ComposeResult
from textual.color import Color, ColorParseError
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Static

from screens.widgets.rowtable import RowTable
from wizard.engine.textsafe import printable

_STYLE = {"pass": "success", "fail": "error", "warn": "warning", "skipped": "text-muted", "running": "accent"}
COLUMNS = (("toolkit-dir", "toolkit installDir"), ("driver-dir", "driverInstallDir"))
NODE_WIDTH = 16
CELL_WIDTH = 28
SHOWN_NODES = 3


def node_label(name: str, width: int = NODE_WIDTH - 1) -> str:
    """The node's name in the node column: whole when it fits, else its host name (the first DNS label) when that does,
    else its head and tail around "…". Cutting the end only made EKS's ``ip-10-20-33-120.us-west-2.compute.internal``
    and ``…-121…`` read the same ``ip-10-20-33-12…``."""
    if len(name) <= width:
        return name
    host, _, _domain = name.partition(".")  # the first DNS label
    if len(host) <= width:
        return host
    head = (width - 1) // 2
    return f"{name[:head]}…{name[-(width - 1 - head) :]}"


#: Seconds between two redraws while checks stream in (at most ten a second, whatever the node count).
FLUSH_INTERVAL = 0.1


def _status(check: Any) -> str:
    return str(getattr(check.status, "value", check.status))


def _nodes(names: list[str]) -> str:
    more = f" and {len(names) - SHOWN_NODES} more" if len(names) > SHOWN_NODES else ""
    return ", ".join(names[:SHOWN_NODES]) + more


class PathResults(Vertical):
    """The summary and each distinct problem with its hint, over a node × folder table."""

    DEFAULT_CSS = """
    PathResults { height: 1fr; }
    PathResults > #path-notes-scroll { height: auto; max-height: 60%; }
    PathResults > #path-notes-scroll:focus { background: $boost; }
    PathResults #path-notes { height: auto; }
    PathResults > RowTable { height: 1fr; min-height: 2; display: none; }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = text
        self._pending: list[Any] = []
        self._flush_timer: Timer | None = None
        self.flushes = 0
        """How many times queued checks were drawn (a test counts them)."""
        self._reset()

    def _reset(self) -> None:
        self._rows: dict[str, dict[str, Any]] = {}
        self._problems: dict[tuple[str, str, str, str], list[str]] = {}
        self._general: list[Any] = []
        self._progress = ""

    def compose(self) -> ComposeResult:
        # scrolled, not cut: at 80×24 a noexec fix is longer than the lines the form leaves (a Tab stop: the arrows
        # scroll it); the per-node table below scrolls on its own
        with VerticalScroll(id="path-notes-scroll"):
            yield Static(self._initial, id="path-notes")
        table = RowTable(id="path-table", cursor=False)
        table.add_column("node", key="node", width=NODE_WIDTH - 1)
        for key, title in COLUMNS:
            table.add_column(title, key=key, width=CELL_WIDTH - 1)
        yield table

    @property
    def table(self) -> RowTable:
        return self.query_one("#path-table", RowTable)

    def update(self, text: str) -> None:
        """Show ``text`` alone (no table): before a check, or while one starts."""
        self._cancel_flush()
        self._pending.clear()
        self._reset()
        self.table.clear()
        self.table.display = False
        self.query_one("#path-notes", Static).update(text)

    def start(self, text: str) -> None:
        """A check begins: ``text`` says so until the first results are drawn."""
        self.update(text)
        self._progress = text

    def add(self, check: Any) -> None:
        """Queue one result; it is drawn with the others of the next :data:`FLUSH_INTERVAL`."""
        self._pending.append(check)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self.flush)

    def show(self, checks: Iterable[Any], empty: str = "") -> None:
        """Replace the view with ``checks`` (``wizard.engine.results.Check``), drawn at once."""
        self.update("")
        self._pending.extend(checks)
        self.finish(empty)

    def finish(self, empty: str = "") -> None:
        """The check is over: draw what is queued, sort the rows by node and drop the progress line."""
        self._progress = ""
        self.flush()
        notes = self.query_one("#path-notes", Static)
        if not self._rows and not self._general:
            notes.update(empty)
            return
        notes.update(self._notes())  # without the progress line, even when nothing was left to draw
        self.table.sort("node")

    def _cancel_flush(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None

    def flush(self) -> None:
        """Draw the queued results: new rows in one batch, changed cells of known rows, the findings."""
        self._cancel_flush()
        pending, self._pending = self._pending, []
        if not pending and self.flushes:
            return
        self.flushes += 1
        table = self.table
        new: dict[str, dict[str, Any]] = {}
        changed: list[Any] = []
        for check in pending:
            if not (check.node and check.check in dict(COLUMNS)):
                self._general.append(check)  # the summary, a node-less skip
                continue
            if check.node not in self._rows:
                new.setdefault(check.node, {})[check.check] = check
            else:
                changed.append(check)
            if _status(check) in ("fail", "warn"):
                key = (_status(check), check.check, check.message, check.hint)
                self._problems.setdefault(key, []).append(check.node)
        for check in changed:
            self._rows[check.node][check.check] = check
            table.update_cell(check.node, check.check, self._cell(check))
        self._rows.update(new)
        table.add_rows(
            (node, (node_label(printable(node)), *(self._cell(cells.get(name)) for name, _ in COLUMNS)))
            for node, cells in new.items()
        )
        table.display = bool(self._rows)
        self.query_one("#path-notes", Static).update(self._notes())

    def _cell(self, check: Any | None) -> Text:
        """``✓ writable, exec`` in the status colour."""
        if check is None:
            return Text("…")
        text = printable(str(check.data.get("short") or check.message))[: CELL_WIDTH - 3]
        colour = _rich_colour(self.app.theme_variables.get(_STYLE.get(_status(check), "text"), ""))
        return Text(f"{check.status.symbol} {text}", style=colour)

    def _notes(self) -> str:
        lines: list[str] = []
        if self._progress:
            lines.append(f"[$accent]…[/] {escape(self._progress)} ({len(self._rows)} node(s) so far)")
        for check in self._general:
            style = f"${_STYLE.get(_status(check), 'text')}"
            name = "" if check.check == "summary" else f"[b]{escape(check.check)}:[/] "
            lines.append(f"[{style}]{check.status.symbol} [/]{name}{escape(check.message)}")
            if check.hint and _status(check) in ("fail", "warn"):
                lines.append(f"   [$text-muted]→ {escape(check.hint)}[/]")
        for (status, name, message, hint), nodes in self._problems.items():
            style = f"${_STYLE.get(status, 'text')}"
            symbol = "✗" if status == "fail" else "!"
            where = escape(_nodes(sorted(nodes)))
            lines.append(f"[{style}]{symbol} [/][b]{escape(name)}[/] on {where}: {escape(message)}")
            if hint:
                lines.append(f"   [$text-muted]→ {escape(hint)}[/]")
        return "\n".join(lines)


@lru_cache(maxsize=64)
def _rich_colour(value: str) -> str:
    """A theme variable as a colour Rich can draw (``""`` for Textual-only ones such as ``auto 60%``, which
    Rich's style parser refuses: the whole frame would fail when such a cell is drawn)."""
    try:
        return Color.parse(value).hex
    except ColorParseError:
        return ""
