"""The Verify step's diagnosis panel: why the failing nodes fail, under the failed checks.

It shows the ``diagnosis`` checks of :meth:`wizard.cluster.facade.Cluster.diagnose`: per failing
node the known failure (title, operator issue), the fix, and the first matching log lines; for an
unexplained failure its last log lines. Hidden while there is nothing to explain. Every text shown
came from the cluster and went through the engine's textsafe guard; markup is escaped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from textual.widgets import Static

SHOWN_LINES = 2
"""Log lines shown per diagnosis in the panel (Enter on the node shows every one)."""


def diagnosis_lines(checks: Sequence[Any], shown_lines: int = SHOWN_LINES, width: int = 0) -> list[str]:
    """The panel's lines (Rich markup) for ``diagnosis`` checks: verdict, fix, the first evidence lines.

    With ``width`` the fix is wrapped to it (the panel cuts long lines, and a fix cut short is no fix)."""
    import textwrap

    lines: list[str] = []
    for check in checks:
        if check.check == "diagnosis-summary":
            continue
        style = "$warning" if check.status.value == "skipped" else "$error"
        where = f"{check.node}: " if check.node else ""
        findings = check.data.get("findings") or []
        # the known failure first: at 80 columns the pod's name would push it out of sight
        what = f"{findings[0]['title']} ({findings[0]['issue']})" if findings else check.message
        lines.append(f"[{style}]{check.status.symbol} {escape(where)}[/]{escape(what)}")
        if check.hint:
            said = f"{'fix' if findings else 'hint'}: {check.hint}"
            wrapped = textwrap.wrap(said, max(20, width - 3)) if width else [said]
            lines += [f"[$text-muted]  {escape(part)}[/]" for part in wrapped]
        for line in list(check.data.get("lines") or [])[:shown_lines]:
            lines.append(f"[$text-muted]  | {escape(str(line))}[/]")
    return lines


class DiagnosisPanel(Static):
    """Diagnosis of the failing nodes; empty and hidden until a failed verification was diagnosed."""

    DEFAULT_CSS = """
    DiagnosisPanel { height: auto; max-height: 7; overflow-y: auto; display: none;
                     border-top: solid $error 40%; text-wrap: nowrap; text-overflow: ellipsis; }
    DiagnosisPanel.-shown { display: block; }
    """

    _shown: tuple[Sequence[Any], bool] = ((), False)

    def on_resize(self) -> None:
        """The fix is wrapped to the width: again at a new one."""
        self.show(*self._shown[:1], running=self._shown[1])

    def show(self, checks: Sequence[Any], *, running: bool = False) -> None:
        """Show ``checks`` (``running``: the diagnosis is still being gathered)."""
        self._shown = (checks, running)
        lines = diagnosis_lines(checks, width=self.size.width or self.app.size.width - 2)
        if running:
            lines.insert(0, "[$accent]… diagnosing the failing nodes (driver logs, events)[/]")
        self.update("\n".join(lines))
        self.set_class(bool(lines), "-shown")
