"""The TUI's mechanics for 5,000 nodes, checked small and fast (issue 12; the full measure is benchmarks/tui_scale.py).

Results that stream in are drawn in batches (a few redraws for hundreds of checks, not one per
check), long tables keep only what they must, the raw log is a bounded ring buffer, and nothing a
step started keeps running once the step is left.
"""

from __future__ import annotations

import gc
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import Log

from screens.app import WizardApp
from screens.steps.verify import LIVE_LOG_LINES, LOG_LINES, VerifyStep
from screens.widgets.pathresults import PathResults
from screens.widgets.rowtable import RowTable
from tests.snapshots.plugin import wait_for
from wizard import collector
from wizard.engine.results import Check, Status


def path_checks(nodes: int, noexec_every: int = 0) -> list[Check]:
    checks = []
    for index in range(nodes):
        node = f"gpu-{index:04d}"
        checks.append(Check("toolkit-dir", Status.PASS, "ok", node=node, data={"short": "writable, exec"}))
        bad = noexec_every and index % noexec_every == 0
        status, short = (Status.FAIL, "noexec /run") if bad else (Status.PASS, "writable, exec")
        checks.append(Check("driver-dir", status, f"/run is {short}", node=node, hint="remount", data={"short": short}))
    return checks


class Holder(App[None]):
    def compose(self) -> ComposeResult:
        yield PathResults("idle", id="results")


async def test_path_results_draw_hundreds_of_checks_in_a_few_batches() -> None:
    app = Holder()
    async with app.run_test(size=(80, 24)) as pilot:
        results = app.query_one(PathResults)
        results.start("checking")
        for check in path_checks(300, noexec_every=3):
            results.add(check)  # all at once, as a burst of results from the engine
        await pilot.pause(0.3)
        assert results.flushes <= 2
        assert results.table.row_count == 300
        results.add(Check("summary", Status.FAIL, "path problems on 100 of 300 nodes"))
        await pilot.pause(0.3)  # drawn by the timer: finish() finds nothing left to draw
        results.finish("none")
        await pilot.pause()
        assert results.flushes <= 3
        notes = str(results.query_one("#path-notes").render())
        assert "path problems on 100 of 300 nodes" in notes and "so far" not in notes
        assert "driver-dir on gpu-0000, gpu-0003, gpu-0006 and 97 more" in notes  # one finding for 100 nodes
        first = results.table.get_row_at(0)
        assert first[0].plain == "gpu-0000" and first[2].plain == "✗ noexec /run"


async def test_path_results_escape_node_names() -> None:
    app = Holder()
    async with app.run_test(size=(80, 24)) as pilot:
        results = app.query_one(PathResults)
        hostile = Check("toolkit-dir", Status.FAIL, "[b]x\x1b[2J", node="n[red]\x1b]0;x", data={"short": "\x1b[2Jx"})
        results.show([hostile])
        await pilot.pause()
        row = results.table.get_row_at(0)
        assert "\x1b" not in row[0].plain + row[1].plain and "[red]" in row[0].plain


def verify_checks(nodes: int) -> list[Check]:
    checks = []
    for index in range(nodes):
        node = f"gpu-{index:04d}"
        checks.append(Check("driver-image", Status.PASS, "nvcr.io/nvidia/driver:580", node=node))
        checks.append(Check("nvidia-smi", Status.PASS, "ok", node=node, data={"driver_version": "580.126.20"}))
        checks.append(Check("toolkit-path", Status.PASS, "ok", node=node))
    return checks


async def test_verify_draws_a_burst_of_results_in_batches_and_keeps_a_bounded_log(tui_env: Path) -> None:
    app = WizardApp(start_step="verify", report_dir=tui_env)  # not connected: the step draws what it is given
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, VerifyStep) and app.screen.is_mounted, what="Verify")
        screen = app.screen
        checks = verify_checks(LOG_LINES // 3 + 100)  # more lines than the on-screen log keeps
        for check in checks:
            app.state.checks.append(check)
            screen._queue(check)
        await pilot.pause(0.3)
        assert screen.flushes <= 2
        table = screen.query_one(RowTable)
        assert table.row_count == len(checks) // 3
        assert str(table.get_row("gpu-0001")[3]) == "✓ 580.126.20" and str(table.get_row("gpu-0001")[4]) == "✓ 1 checks"
        assert screen.query_one(Log).line_count <= LIVE_LOG_LINES * screen.flushes  # a batch writes its tail only
        await pilot.click("#save-log")  # the whole log, every line, into the state folder
        folder = tui_env / ".local" / "state" / "gpu-wizard"
        await wait_for(pilot, lambda: list(folder.glob("verify-*.log")), what="the saved log")
        saved = next(folder.glob("verify-*.log")).read_text().splitlines()
        assert len(saved) == len(checks) and saved[0].startswith("✓ driver-image gpu-0000")


async def test_leaving_verify_stops_its_timers_and_workers(tui_env: Path) -> None:
    app = WizardApp(start_step="verify", report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, VerifyStep) and app.screen.is_mounted, what="Verify")
        screen = app.screen
        for check in verify_checks(3):
            screen._queue(check)  # a draw is pending when the step is left
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.state.step == "apply" and app.screen is not screen, what="Apply")
        await pilot.pause(0.2)
        assert not screen.is_attached
        assert not [t for t in screen._timers if t._active.is_set()]
        assert not [w for w in app.workers if w.node is screen and w.is_running]
        assert collector.runs() == 0 and gc.get_freeze_count() == 0  # nothing left frozen for the collector


def test_the_heap_is_frozen_while_a_stream_runs_and_let_go_after() -> None:
    with collector.frozen():
        assert gc.get_freeze_count() > 0
        with collector.frozen():  # a second stream meanwhile
            pass
        assert gc.get_freeze_count() > 0 and collector.runs() == 1
    assert gc.get_freeze_count() == 0 and collector.runs() == 0
