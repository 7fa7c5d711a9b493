"""Where the focus is shows plainly at 80×24, on every Tab stop of every step, and each step's first focus is
where a newcomer starts.

Found walking ``gpu-wizard --demo ubuntu-upstream`` in tmux: Tab from the driver version landed in
"Copy from", whose text the next keystroke replaced, and nothing but a faint tint said so. Here each
Tab stop is focused in turn and the frame compared, cell by cell, with the same frame with nothing
focused: a focus that shows must change a few cells plainly (a colour far from the one before, reverse
video, or a mark drawn), not by a 5 % tint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.style import Style
from textual.widget import Widget
from textual.widgets import Label, RadioSet

from screens.app import WizardApp
from screens.focusrow import FOCUSED_LABEL
from screens.widgets.field import AnswerField
from tests.helpers.tui import connected, on_step
from tests.helpers.walk import forward

#: own 5 % focus tint moves it by about 10.
PLAIN_CHANGE = 90
#: Cells that must change plainly for a focus to count as shown (a lone input cursor is one).
PLAIN_CELLS = 4

#: The steps whose every Tab stop is checked: the first one, and the form of the walk's report. The steps
#: between have their first focus checked (the same kinds of widget); later steps would double the test's
#: time for widgets seen here, and ``test_tui_snapshots`` shows them focused.
STEPS_CHECKED = ("connect", "driver")

Cell = tuple[str, Style]


def frame(app: WizardApp) -> list[list[Cell]]:
    """The active screen as rows of (character, style) cells."""
    rows = []
    for strip in app.screen._compositor.render_strips():
        row: list[Cell] = []
        for segment in strip:
            style = segment.style or Style()
            row.extend((char, style) for char in segment.text)
        rows.append(row)
    return rows


def _distance(a: Style, b: Style) -> float:
    if a.bgcolor is None or b.bgcolor is None:
        return 0.0 if a.bgcolor == b.bgcolor else 255.0
    ra, ga, ba = a.bgcolor.get_truecolor()
    rb, gb, bb = b.bgcolor.get_truecolor()
    return float(((ra - rb) ** 2 + (ga - gb) ** 2 + (ba - bb) ** 2) ** 0.5)


def plain_changes(before: list[list[Cell]], after: list[list[Cell]]) -> int:
    """Cells whose look changed plainly: another character, reverse video toggled, or a far background."""
    changed = 0
    for row_before, row_after in zip(before, after, strict=True):
        for (char_a, style_a), (char_b, style_b) in zip(row_before, row_after, strict=False):
            if (
                char_a != char_b
                or bool(style_a.reverse) != bool(style_b.reverse)
                or _distance(style_a, style_b) >= PLAIN_CHANGE
            ):
                changed += 1
    return changed


async def unshown_focus(pilot: Any, *, only_first: bool = False) -> list[str]:
    """The Tab stops of the current step (one of each kind, or only the first focused) whose focus does not show plainly."""
    app = pilot.app
    screen = app.screen
    first = screen.focused
    screen.set_focus(None)
    await pilot.pause()
    # the stops in view (those below the fold are more of the same widgets, and scrolling would move the frame)
    visible = screen._compositor.visible_widgets
    stops: list[Widget] = []
    kinds: set[type[Widget]] = set()
    for widget in screen.focus_chain:  # one of each kind: each kind styles its focus in one place
        if widget in visible and type(widget) not in kinds:
            kinds.add(type(widget))
            stops.append(widget)
    if only_first:
        stops = [first] if first is not None else []
    bare = frame(app)
    unshown = []
    for widget in stops:
        widget.focus(scroll_visible=False)
        await pilot.pause()
        if plain_changes(bare, frame(app)) < PLAIN_CELLS:
            unshown.append(f"{app.state.step}: {widget!r} in {widget.parent!r} at {widget.region}")
    screen.set_focus(None)
    if first is not None:
        first.focus()
        await pilot.pause()
    return unshown


async def test_every_tab_stop_shows_its_focus_and_each_step_starts_where_one_types(tui_env: Path) -> None:
    app = WizardApp(demo="ubuntu-upstream", step_delay=0.0, report_dir=tui_env)
    unshown: list[str] = []
    first_focus: dict[str, Widget | None] = {}
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        for step in ("connect", "nodes", "mode", "driver"):
            await forward(pilot, step)
            assert on_step(app, step)
            await pilot.pause(0.1)
            first_focus[step] = app.screen.focused
            if step == "mode":
                modes = app.screen.query_one("#modes", RadioSet)
                # the list's cursor is on the chosen mode, not on the first one beside it
                assert modes._selected == modes.pressed_index >= 0
            if step == "driver":
                # the walk's case: the version first; Tab lights "Copy from"'s label, and the version's goes dark
                version = app.screen.query_one("#driver-version", AnswerField)
                source = app.screen.query_one("#driver-source", AnswerField)
                assert first_focus[step] is version.input
                await pilot.press("tab", "tab")  # two quick Tabs: their focus and blur events may cross
                await pilot.press("shift+tab")
                await pilot.pause()
                assert app.screen.focused is source.input
                assert source.query_one(Label).has_class(FOCUSED_LABEL)
                assert not version.query_one(Label).has_class(FOCUSED_LABEL)
                assert [label for label in app.screen.query(Label) if label.has_class(FOCUSED_LABEL)] == [
                    source.query_one(Label)
                ]
            if step in STEPS_CHECKED:
                unshown += await unshown_focus(pilot)
            else:
                unshown += await unshown_focus(pilot, only_first=True)
    assert not unshown, "focus not visible on: " + "; ".join(unshown)
    # where a newcomer starts: Next once connected, the list to read, the choice to make, the field to fill
    assert first_focus["connect"] is not None and first_focus["connect"].id == "next"
    assert first_focus["nodes"] is not None and first_focus["nodes"].id == "node-table"
    assert isinstance(first_focus["mode"], RadioSet)
