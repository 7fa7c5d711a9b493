"""The global keys of ``screens.keys`` do what the footer, F1 and the README say, in a terminal and in web mode.

A browser keeps Ctrl+N, Ctrl+P, Ctrl+S and F1; in web mode (``--web``, as ``gpu-wizard serve`` starts it)
every one of those actions is reached with the key shown instead (F9, F4, F8, F2), and the footer and
F1 help name them. In a terminal Ctrl+P opens the palette (issue 25: binding F4 to the palette had
taken Textual's own Ctrl+P away).
"""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette

from screens import keys
from screens.dialogs import HelpDialog
from tests.helpers.offline import offline_app
from tests.snapshots.plugin import screen_text, wait_for


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


async def test_in_a_terminal_ctrl_p_opens_the_palette_on_every_step_and_field(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "driver")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "^p Palette" in screen_text(app)
        for focused in ("driver-version", "driver-image"):  # an Input keeps no ctrl+p for itself
            app.screen.query_one(f"#{focused} Input").focus()
            await pilot.press("ctrl+p")
            await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), what="the palette on Ctrl+P")
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, CommandPalette), what="the palette closed")


def test_the_readme_key_table_is_the_app_s() -> None:
    """Every global key's row in the README names the keys bound (and Ctrl+P is tested above to work)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()

    def written(key: str) -> str:
        named = {"escape": "Esc"}.get(key)
        return named or "+".join(part.capitalize() if len(part) > 2 else part.upper() for part in key.split("+"))

    for key in keys.GLOBAL_KEYS:
        assert f"| {written(key.terminal)} | {written(key.browser)} |" in readme, key
