"""The frame around every step at small sizes: the step strip, Back on the first step, toasts (issue 25, cosmetic).

Found at 60×20: the step strip lost Apply and Verify; on step 1 Esc did nothing visible (the bell is
silent in tmux) beside a Back button that looked pressable; at 80×24 a toast at half the width
folded a path in two.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button

from screens.widgets.chrome import StepStrip
from tests.helpers.offline import offline_app
from tests.snapshots.plugin import screen_text, wait_for


def strip_text(app: object) -> str:
    return str(app.screen.query_one(StepStrip).render())  # type: ignore[attr-defined]


async def test_the_step_strip_keeps_every_step_at_60x20_and_full_names_at_80x24(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        text = strip_text(app)
        assert "3 Mode" in text and "7 Appl" in text and "8 Veri" in text, text
        assert text.split("8")[-1].strip() in screen_text(app).splitlines()[1]  # drawn, not cut
        await pilot.resize_terminal(40, 20)
        await pilot.pause()
        text = strip_text(app)
        assert "3 Mode" in text and " 7 8" in text, text
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert "7 Apply 8 Verify" in strip_text(app)


async def test_escape_on_the_first_step_says_why_and_back_is_not_offered(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "connect", answers=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        back = app.screen.query_one("#back", Button)
        assert back.disabled and not back.visible
        assert "◀ Back" not in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: any("first step" in n.message for n in app._notifications), what="the note")


async def test_a_toast_at_80x24_keeps_a_path_on_one_line(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode", answers=False)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        path = "~/.config/gpu-wizard/answers.previous.yaml"
        app.notify(f"The answers are kept in {path} (use them with --answers).", title="Saved run not resumed")
        await pilot.pause(0.3)
        assert path in screen_text(app)
