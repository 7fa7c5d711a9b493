"""Step 8, Verify: per-node proof that the driver works, filling in live, with the raw evidence.

``Cluster.verify`` yields ``Check`` findings and ``LogLine`` output; a worker bound to this screen
turns each into a table cell (image, imageID digest, nvidia-smi: ✓/✗ with the reason) or a log
line. Findings without a node (ClusterPolicy state, validator) go to the summary. Export writes
the report as Markdown and JSON.

For 5,000 nodes: results are queued and drawn at most every :data:`FLUSH_INTERVAL` (new rows in one
go, only changed cells) into a :class:`~screens.widgets.rowtable.RowTable` (it draws only the rows on
screen), the summary comes from running counts, and the on-screen log is a ring buffer of
:data:`LOG_LINES` that, while results stream in, gets only the newest :data:`LIVE_LOG_LINES` of each
batch (a few lines are on screen; every line is in the final log, the report and "Save log").
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widgets import Button, Label, Log, Static

from screens.host import Verified
from screens.steps.base import StepScreen
from screens.widgets.diagnosis import DiagnosisPanel
from screens.widgets.rowtable import RowTable
from wizard.engine.textsafe import printable

#: Which table column a node-level check fills; every other node-level check goes to "Host".
COLUMNS = {
    "driver-image": "image",
    "image-digest": "digest",
    "nvidia-smi": "smi",
    "host-nvidia-smi": "smi",
}
#: Lines the on-screen log keeps (a ring buffer: the oldest go); "Save log" writes every line to a file.
LOG_LINES = 2000
#: Lines of a batch written to the on-screen log while results stream in (the newest; at four batches a
#: second more than anyone reads): formatting and measuring 30,000 lines nobody sees was the TUI's cost.
LIVE_LOG_LINES = 50
#: Seconds between two redraws while results stream in (at most four a second, whatever the node count):
#: each redraw is a full frame of the screen, which at ten a second was most of the TUI's cost over the
#: engine's own (profiled at 1,000 nodes: docs/benchmarks.md, "Costs behind the code").
FLUSH_INTERVAL = 0.25
#: Failed nodes named in the summary line (the table, the log and the report have all of them).
SHOWN_NODES = 5
#: Longest cell text before it is cut (the full text is in the summary, the log and the report).
CELL_WIDTH = 13


def cell(check: Any) -> str:
    """A short table cell: ``✓ as rendered``, ``✓ e6da525dc70…`` (digest), ``✓ 580.126.09.1``, ``✗ <reason>``."""
    text = str(check.message)
    if check.status.value == "skipped":
        text = "SKIPPED"  # the reason is in the summary and the report
    elif check.ok and check.check == "driver-image":
        text = "as rendered"
    elif check.ok and check.check == "image-digest" and check.data.get("digest"):
        text = str(check.data["digest"]).removeprefix("sha256:")[: CELL_WIDTH - 2] + "…"
    elif check.ok and check.check in ("nvidia-smi", "host-nvidia-smi"):
        text = str(check.data.get("driver_version") or text)
    if len(text) > CELL_WIDTH:
        text = text[: CELL_WIDTH - 1] + "…"
    return f"{check.status.symbol} {text}"


class VerifyStep(StepScreen):
    """Prove the install, node by node."""

    NEXT_LABEL = "Finish ✓"
    _verifying = False

    DEFAULT_CSS = """
    #verify-summary { height: auto; max-height: 4; }
    #verify-notes { height: auto; max-height: 4; text-wrap: nowrap; text-overflow: ellipsis; }
    #verify-table { height: auto; max-height: 7; }
    #verify-log { height: 1fr; min-height: 4; border-top: solid $primary 40%; }
    #verify-row { height: 1; }
    #verify-row > Label { width: 1fr; text-style: bold; color: $primary; }
    #verify-row > Button { margin-left: 1; }
    """

    def compose_body(self) -> ComposeResult:
        yield Static("", id="verify-summary")  # the verdict and what to run first: wrapped, never cut
        yield Static("", id="verify-notes")  # one line per finding (in full in the table, the log, the report)
        yield RowTable(id="verify-table")
        with Horizontal(id="verify-row"):
            yield Label("Per node (Enter: in full)")
            yield Button("Run again", id="reverify", compact=True)
            yield Button("Save log", id="save-log", compact=True)
            yield Button("Export report…", id="export", compact=True, variant="primary")
        yield DiagnosisPanel(id="verify-diagnosis")
        yield Log(max_lines=LOG_LINES, id="verify-log")

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.add_column("Node", key="node")
        for label, key in (("Image", "image"), ("Digest", "digest"), ("nvidia-smi", "smi"), ("Host", "host")):
            table.add_column(label, key=key, width=CELL_WIDTH + 1)
        self._verifying = False
        self._reset_view()
        if self.state.cluster is None:
            self.query_one("#verify-summary", Static).update(
                "[$error]✗ not connected: verification needs the cluster[/]"
            )
        else:
            self.verify()
        self.refresh_nav()

    @on(Button.Pressed, "#reverify")
    def _again(self) -> None:
        if self.state.cluster is not None:
            self.verify()

    @on(Button.Pressed, "#export")
    def _export(self) -> None:
        from screens.report import export_report

        export_report(self.app)

    @work(exclusive=True, group="verify", exit_on_error=False)
    async def verify(self) -> None:
        """Stream the engine's verification into the table and the log (drawn in batches, see :meth:`_flush`)."""
        state = self.state
        table = self.query_one(RowTable)
        table.clear()
        self.query_one(Log).clear()
        state.reset_step(self.STEP)  # the checks, the log and the diagnosis of the run before
        self.query_one(DiagnosisPanel).show([])
        self._reset_view()
        self._verifying = True
        self._summary()
        self.refresh_nav()
        plan = state.valid_plan()
        from wizard.engine.results import Check

        try:
            async with self.wizard.open_registry(plan) as registry:
                no_registry = "" if registry is not None else "this demo cluster simulates no registry to ask"
                stream = state.connected().verify(plan, state.rendered, registry=registry, no_registry=no_registry)
                async for item in stream:
                    if isinstance(item, Check):
                        if item.check == "probe-pod":  # a privileged pod left on a node: say it where seen
                            self.notify(item.message, title="Probe pod left behind", severity="warning", timeout=30)
                        state.checks.append(item)
                        self._queue(item)
                    else:
                        state.log_lines.append(item)
        finally:
            self._verifying = False
            if self.is_attached:  # not when the step was left (the worker is cancelled with the screen)
                self._flush()
        # nodes are checked concurrently; once done, show rows and output node by node
        for row, row_cells in table.rows.items():
            for column, (text, _) in zip(("node", "image", "digest", "smi", "host"), row_cells, strict=True):
                if text == "…":
                    table.update_cell(row, column, "- not checked")
        table.sort("node")
        log = self.query_one(Log)
        log.clear()  # one line per result, the last LOG_LINES of them; the raw output on Enter, all in "Save log"
        tail = sorted(state.checks, key=lambda c: c.node)[-LOG_LINES:]  # formatted: only the lines kept
        log.write_lines(printable(check.line()) for check in tail)
        self.call_after_refresh(log.scroll_end, animate=False)  # the tail, once the table above has its final height
        verified = self.verified()
        self.post_message(Verified(verified))
        self._summary()
        self.refresh_nav()
        if verified:
            self.state.mark_verified()
        elif self._not_applied is None and any(not c.ok for c in state.checks):  # nothing to explain on nodes unjudged
            await self._diagnose(plan)

    async def _diagnose(self, plan: Any) -> None:
        """After a failure: the failing nodes' driver logs and events, matched against known failures."""
        from wizard.cluster.errors import ClusterError
        from wizard.engine.results import Check, Status

        panel = self.query_one(DiagnosisPanel)
        failed = sorted({c.node for c in self.state.checks if not c.ok and c.node})
        panel.show([], running=True)
        found: list[Check] = []
        try:
            async for check in self.state.connected().diagnose(plan, nodes=failed or None):
                found.append(check)
                panel.show(found, running=True)
        except ClusterError as exc:
            found.append(Check("diagnosis", Status.SKIP, f"diagnosis could not run: {exc.message}", hint=exc.hint))
        self.state.diagnosis = found
        panel.show(found)

    def _reset_view(self) -> None:
        self._pending: list[Any] = []
        self._by_node: dict[str, list[Any]] = {}
        self._flush_timer: Timer | None = None
        self.flushes = 0
        """How many times queued results were drawn (a test counts them)."""
        self._seen_nodes: set[str] = set()
        self._failed, self._passed = 0, 0
        self._tallied = 0
        self._failed_nodes: dict[str, None] = {}
        self._skipped: list[Any] = []
        self._general: list[Any] = []
        self._notable: list[Any] = []
        self._findings: list[Any] | None = None
        self._verdict: Any = None
        """A failing summary line (it counts in no figure: "no GPU nodes found" fails with no check failed)."""
        self._not_applied: Any = None
        """The ``plan-applied`` failure: the live objects do not hold the plan (nothing else was checked)."""

    def _queue(self, check: Any) -> None:
        """Keep ``check`` for the next draw: at most one every :data:`FLUSH_INTERVAL`, whatever the node count."""
        self._pending.append(check)
        self._tally(check)
        if check.node:
            self._by_node.setdefault(check.node, []).append(check)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush)

    def _flush(self) -> None:
        """Draw the queued results: their rows and cells, their log lines, the summary."""
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.flushes += 1
        table = self.query_one(RowTable)
        touched: dict[str, None] = {}
        for check in pending:
            if check.node:
                touched[check.node] = None
        new = []
        for node in touched:
            cells = self._cells(node)
            if node in table.rows:
                for column, text in cells.items():
                    table.update_cell(node, column, text)  # redraws only a changed cell's line, if on screen
            else:
                new.append((node, (printable(node), *(cells[c] for c in ("image", "digest", "smi", "host")))))
        table.add_rows(new)
        self.query_one(Log).write_lines(printable(check.line()) for check in pending[-LIVE_LOG_LINES:])
        self._summary()

    def _cells(self, node: str) -> dict[str, str]:
        """The row of ``node`` from its checks so far (``…`` where none came yet); text, never markup."""
        cells = dict.fromkeys(("image", "digest", "smi", "host"), "…")
        others = []
        for check in self._by_node.get(node, []):
            column = COLUMNS.get(check.check)
            if column is not None:
                cells[column] = printable(cell(check))
            else:
                others.append(check)
        if others:  # Host: ✓ while every other check of the node passed, else the first failure
            failed = [c for c in others if not c.ok]
            cells["host"] = printable(cell(failed[0])) if failed else f"✓ {len(others)} checks"
        return cells

    @on(Button.Pressed, "#save-log")
    def _save_log(self) -> None:
        from screens.report import save_full_log

        save_full_log(self.app)

    @on(RowTable.RowSelected, "#verify-table")
    def _node_in_full(self, event: RowTable.RowSelected) -> None:
        """Enter on a node: every check of it, with its hint, and the node's raw output."""
        from screens.dialogs import HelpDialog

        node = event.key
        lines = [f"## {node}", ""]
        for check in (c for c in self.state.checks if c.node == node):
            lines.append(f"* {check.line()}")
            if check.hint and check.status.value != "pass":
                lines.append(f"  * what to do: {self._runnable(check.hint)}")
        for check in (c for c in self.state.diagnosis if c.node == node):
            lines += ["", f"Diagnosis: {check.message}"]
            if check.hint:
                lines.append(f"* fix: {check.hint}")
            lines += ["", "```", *[str(line) for line in check.data.get("lines") or []], "```"]
        raw = [line.text for line in self.state.log_lines if line.node == node]
        if raw:
            lines += ["", "Raw output:", "", "```", *raw, "```"]
        self.app.push_screen(HelpDialog(f"Verify — {node}", "\n".join(lines)))

    def verified(self) -> bool:
        """Every finding passed (warnings allowed), none was SKIPPED (could not run), and one was made.

        From the tally when it counted every finding (a scan of 30,000 findings held the loop, and the end
        of a verification asked twice)."""
        checks = self.state.checks
        if self._tallied == len(checks):  # a SKIPPED summary comes only with a SKIPPED check, which _skipped holds
            return self._tallied > 0 and not self._failed and not self._skipped and self._verdict is None
        return bool(checks) and all(c.ok and c.status.value != "skipped" for c in checks)

    def _tally(self, check: Any) -> None:
        """Count ``check`` into the summary's figures (kept as results come: no rescan of thousands of checks)."""
        status = check.status.value
        self._tallied += 1
        if check.node:
            self._seen_nodes.add(check.node)
        if check.check == "summary":  # the run's verdict, not one more check: counted by no figure
            if not check.ok:
                self._verdict = check
        elif not check.ok:
            self._failed += 1
            self._failed_nodes.setdefault(check.node or "cluster", None)
        if check.check == "plan-applied" and not check.ok:
            self._not_applied = check
        if status == "skipped" and check.check != "summary":
            self._skipped.append(check)
        elif check.ok and check.check != "summary":
            self._passed += 1
        if not check.node and check.check != "summary":
            self._general.append(check)
        if check.node and status in ("fail", "warn", "skipped") and len(self._notable) < 2:
            self._notable.append(check)

    def _summary(self) -> None:
        lines, notes = [], []
        nodes, failed, skipped, passed = len(self._seen_nodes), self._failed, self._skipped, self._passed
        if self._verifying:
            lines.append(f"[$accent]… verifying[/] {nodes} node(s) so far")
        elif not self.state.checks:
            lines.append("[$text-muted]no findings[/]")
        elif self._not_applied is not None:
            lines.append(f"[$error]✗ not verified:[/] {escape(self._not_applied.message)}")
            lines.append(f"[$text-muted]  → {escape(self._apply_first())}[/]")
        elif failed:
            bad = sorted(self._failed_nodes)
            where = ", ".join(bad[:SHOWN_NODES]) + (
                f" and {len(bad) - SHOWN_NODES} more" if len(bad) > SHOWN_NODES else ""
            )
            also = f", {len(skipped)} SKIPPED" if skipped else ""
            lines.append(f"[$error]✗ not verified:[/] {failed} check(s) failed on {escape(where)}{also}")
        elif self._verdict is not None:
            lines.append(f"[$error]✗ not verified:[/] {escape(self._verdict.message)}")
        elif skipped:
            reason = str(skipped[0].data.get("reason") or skipped[0].message)
            lines.append(
                f"[$warning]- not verified:[/] {nodes} GPU node(s), {passed} checks passed, "
                f"{len(skipped)} SKIPPED ({escape(skipped[0].check)}: {escape(reason)})"
            )
        else:
            lines.append(f"[$success]✓ verified:[/] {nodes} GPU node(s), {passed} checks passed")
        if self._findings is None:
            from screens.findings import plan_findings

            self._findings = plan_findings(self.state)  # the plan does not change while Verify is shown
        if self._findings:
            notes.append(
                f"[$warning]! {len(self._findings)} finding(s) of the plan (Preview's Warnings tab, the report):[/] "
                f"{escape(self._findings[0].message)}"
            )
        for check in self._general:
            if check is self._not_applied:
                continue  # said first, with what to run
            symbol_style = "$success" if check.ok else "$error"
            notes.append(f"[{symbol_style}]{check.status.symbol} [/]{escape(check.check)}: {escape(check.message)}")
        for check in self._notable:
            notes.append(
                f"[$warning]{check.status.symbol} {escape(check.node)} {escape(check.check)}:[/] {escape(check.message)}"
            )
            if check.hint:
                notes.append(f"[$text-muted]  → {escape(self._runnable(check.hint))}[/]")
        self.query_one("#verify-summary", Static).update("\n".join(lines))
        notes_view = self.query_one("#verify-notes", Static)
        notes_view.update("\n".join(notes))
        notes_view.display = bool(notes)

    def _apply_first(self) -> str:
        """What to run before verifying: the saved ``helm upgrade`` when this run saved one, else the check's hint."""
        command = self.state.helm_command
        if command:
            return f"run the saved helm upgrade first, then Run again: {command}"
        return str(self._not_applied.hint)

    def _runnable(self, hint: str) -> str:
        """A hint naming kubectl, made runnable: an in-process demo has no kubeconfig unless told where it is."""
        demo = self.wizard.demo_cluster
        if "kubectl" not in hint or demo is None:
            return hint
        from screens.state import display_path

        return hint.replace("kubectl ", f"KUBECONFIG={display_path(demo.kubeconfig_path)} kubectl -n gpu-operator ", 1)

    def busy(self) -> str:
        return "The verification is running (its probe pods are removed on the way out)" if self._verifying else ""

    def blocker(self) -> str:
        if self._verifying:
            return "verification is running…"
        return ""
