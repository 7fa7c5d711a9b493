"""A list of check results: ``✓``/``✗``/``!`` per finding, and under each failure what to do.

Fed with ``wizard.engine.results.Check`` objects (preflight, node-side path checks); it only formats them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.widgets import Static

_STYLE = {"pass": "$success", "fail": "$error", "warn": "$warning", "skipped": "$text-muted", "running": "$accent"}


class CheckList(Static):
    """Check results, one line each, with a hint line under every failure or warning."""

    DEFAULT_CSS = """
    CheckList { height: auto; }
    """

    def show(self, checks: Iterable[Any], empty: str = "") -> None:
        """Replace the list with ``checks`` (``wizard.engine.results.Check``)."""
        lines: list[str] = []
        for check in checks:
            status = str(getattr(check.status, "value", check.status))
            style = _STYLE.get(status, "$text")
            where = f" {check.node}" if check.node else ""
            text = Text(f"{check.message}")
            name = _escape(f"{check.check}{where}")
            lines.append(f"[{style}]{check.status.symbol}[/] [b]{name:<15}[/] {_escape(text.plain)}")
            if check.hint and status in ("fail", "warn"):
                lines.append(f"   [$text-muted]→ {_escape(check.hint)}[/]")
        self.update("\n".join(lines) if lines else empty)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
