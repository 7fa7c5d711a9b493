"""Ctrl+N pressed several times quickly: each press moves one step on or says why it did not, none is lost.

Found walking ``gpu-wizard --demo ubuntu-upstream`` in tmux: four quick Ctrl+N right after closing the
help (F1, Esc) moved one step. A terminal delivers such a burst before the App has switched screens, so
every press reached Connect and asked for the same next step. The keys here are posted the way the
terminal driver posts them (all at once, no pause between), not with ``pilot.press``, which waits for
the app to settle after each key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Static

from screens.app import WizardApp
from screens.dialogs import HelpDialog
from screens.widgets.chrome import NavBar
from tests.helpers.tui import connected, on_step
from tests.snapshots.plugin import wait_for


def burst(app: WizardApp, key: str, times: int) -> None:
    """``times`` presses of ``key`` arriving together, as a fast typist's do."""
    for _ in range(times):
        app.post_message(events.Key(key, None))


async def help_opened_and_closed(pilot: Any) -> None:
    """F1, then the Esc that closes the help, arriving with the keys that follow it (no pause)."""
    app = pilot.app
    await pilot.press("f1")
    await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the help")
    burst(app, "escape", 1)


async def test_quick_ctrl_n_each_move_a_step_or_say_why_not(tui_env: Path) -> None:
    app = WizardApp(demo="sle-micro-precompiled", step_delay=0.0, report_dir=tui_env)
    notes: list[str] = []
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await connected(pilot)
        # From Nodes once its table is read: Nodes refuses Next while it still discovers (a burst from
        # Connect then ends on Nodes with that reason, or goes on, depending on the machine's speed)
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: on_step(app, "nodes") and not app.screen.blocker(), 20, "the node table")
        await help_opened_and_closed(pilot)
        burst(app, "ctrl+n", 3)
        # Nodes -> Mode -> Driver; the third meets the empty target registry (required: no public one is guessed)
        await wait_for(pilot, lambda: on_step(app, "driver") and not app.pending_moves, 20, "the Driver step")
        await pilot.pause(0.3)
        assert app.state.step == "driver"
        notes = [n.message for n in app._notifications]
        assert any("driver.repository" in note for note in notes), notes
        status = str(app.screen.query_one(NavBar).query_one("#nav-status", Static).render())
        assert "driver.repository" in status
        # Esc twice quickly: back two steps, to Nodes
        burst(app, "escape", 2)
        await wait_for(pilot, lambda: on_step(app, "nodes") and not app.pending_moves, 20, "the Nodes step")
        await pilot.pause(0.2)
        assert app.state.step == "nodes"
        # Ctrl+N over the open help: it closes the help and moves on (the dialog has no use for the key)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the help")
        burst(app, "ctrl+n", 2)
        await wait_for(pilot, lambda: on_step(app, "driver") and not app.pending_moves, 20, "Driver, past Mode")
