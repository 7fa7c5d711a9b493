"""A finding made on one step travels with the plan to Preview, the Apply confirmation and the report.

Issue 16: on ``noexec-run`` the path problem showed only after pressing Check, Next was not
blocked, and Apply did not mention it; Paths and Verify gave contradicting advice. Now the Paths
step checks at once, blocks Next until fixed or explicitly overridden, and the finding is listed
in Preview's Warnings tab, the Apply confirmation and the exported report, with the same hint.
"""

from __future__ import annotations

from pathlib import Path

from screens.dialogs import ConfirmDialog
from screens.report import report_markdown
from tests.helpers.tui import demo_app, next_to, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.engine.nodescript import StepResult, mount_finding

NOEXEC = "/run/nvidia/driver (to be created in /run): /run is mounted noexec"


async def test_noexec_run_blocks_paths_and_travels_to_apply_and_the_report(tui_env: Path) -> None:
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")  # the noexec /run, found with the hosts (the defaults' folders)
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the Nodes step's answer")
        await pilot.click("#check-paths")  # Paths' own probe of the same folders: its finding, its override
        await wait_for(pilot, lambda: "continue anyway" in app.screen.blocker(), 30, "the path check")
        await pilot.press("ctrl+n", "ctrl+n", "ctrl+n")
        await pilot.pause()
        assert app.state.step == "paths"
        assert len([n for n in app._notifications if n.title == "Not yet"]) == 1  # one toast, not a stack
        await pilot.click("#override")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        tab = app.screen.tab_text("tab-advice")
        assert NOEXEC in tab and "driverInstallDir does not move it" in tab
        await next_to(pilot, "apply")  # the override given on Paths holds for the same answers
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        assert "Apply with warnings?" in screen_text(app) and NOEXEC in app.screen.body
        await pilot.press("escape")
        report = report_markdown(app.state)
        assert "## Findings of the plan" in report and NOEXEC in report and "what to do: remount /run" in report


def test_verify_and_paths_give_the_same_advice_for_a_noexec_driver_dir() -> None:
    _, _, hint = mount_finding(
        StepResult("/run rw,nosuid,nodev,noexec", 0),
        "/run/nvidia/driver",
        "the driver install directory",
        writable=False,
    )
    assert "remount /run with exec" in hint and "driverInstallDir does not move it" in hint
    assert "move the driver install directory" not in hint


def test_snapshot_updates_are_refused_under_ci(monkeypatch) -> None:
    from tests.snapshots.plugin import refuse_update

    monkeypatch.setenv("CI", "true")
    assert refuse_update()
    monkeypatch.delenv("CI")
    assert not refuse_update()
