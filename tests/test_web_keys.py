"""The wizard in web mode (``--web``, as ``gpu-wizard serve`` starts it) without a browser: the browser's keys.

A browser keeps Ctrl+N, Ctrl+P, Ctrl+S and F1; here every one of those actions is reached with the
key shown instead (F9, F4, F8, F2), and the footer and F1 help name them.
"""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette

from screens.dialogs import HelpDialog
from tests.snapshots.plugin import screen_text, wait_for
from tests.test_tui_offline import offline_app


async def test_in_web_mode_f2_f4_f8_and_f9_do_what_the_browser_keeps_from_f1_ctrl_p_ctrl_s_ctrl_n(
    tui_env: Path,
) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode", answers=False)
    app.web = True
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "F9 Next" in text and "F2 Help" in text and "F4 Palette" in text and "F8 Save" in text
        assert "^n Next" not in text and "F2 compares all three" in text

        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="help on F2")
        help_text = app.screen._text  # the Markdown given to the dialog (its end is below the fold)
        assert "**Keys (in the browser)**" in help_text and "`F9` next step" in help_text
        await pilot.press("f2")  # closes it again
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpDialog), what="help closed on F2")

        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette on F4")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette), what="the palette closed")

        await pilot.press("f8")
        await pilot.pause()
        assert (tui_env / ".config" / "gpu-wizard" / "answers.yaml").is_file()

        await pilot.press("f9")
        await wait_for(pilot, lambda: app.state.step == "driver", what="Driver & registry on F9")
