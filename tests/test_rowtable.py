"""The virtualised table (screens/widgets/rowtable.py): its cost follows the lines on screen, not its rows.

Counted, not timed: how many row lines a frame draws with 5,000 rows held, what keys do to the
cursor and the scroll, cells by key, auto widths, sorting, and Enter/click selecting a row.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from screens.widgets.rowtable import RowTable
from tests.snapshots.plugin import screen_text

ROWS = 5000


class Holder(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowTable(id="table", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.add_column("Node", key="node")
        table.add_column("State", key="state", width=8)

    def on_row_table_row_selected(self, event: RowTable.RowSelected) -> None:
        self.selected.append(event.key)


def rows(count: int) -> list[tuple[str, tuple[str, str]]]:
    return [(f"gpu-{i:04d}", (f"gpu-{i:04d}", "✓ ready")) for i in range(count)]


async def test_a_frame_draws_the_lines_on_screen_whatever_the_rows_held() -> None:
    app = Holder()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.add_rows(rows(ROWS))
        table.focus()
        await pilot.pause()
        assert table.row_count == ROWS
        table.lines_rendered = 0
        table.refresh()
        await pilot.pause()
        assert table.lines_rendered == table.size.height - 1  # every line but the header, once
        text = screen_text(app)
        assert "gpu-0000" in text and "gpu-0010" in text and "gpu-0011" not in text


async def test_keys_move_the_cursor_and_scroll_it_into_view() -> None:
    app = Holder()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.add_rows(rows(ROWS))
        table.focus()
        await pilot.press("down", "down")
        assert table.cursor_key == "gpu-0002"
        await pilot.press("pagedown")
        assert table.cursor_row == 2 + table.size.height - 1
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_key == "gpu-4999" and "gpu-4999" in screen_text(app)
        await pilot.press("home", "up")
        await pilot.pause()
        assert table.cursor_key == "gpu-0000" and "gpu-0000" in screen_text(app)
        table.move_cursor(row=table.get_row_index("gpu-2500"))
        await pilot.pause()
        assert "gpu-2500" in screen_text(app)
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == ["gpu-2500"]


async def test_cells_by_key_widths_and_sorting() -> None:
    app = Holder()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.add_row("b-node", Text("✗ failed", style="red"), key="b")
        table.add_row("a-node-with-a-long-name", "…", key="a")
        assert table.columns[0].width == len("a-node-with-a-long-name")  # grown to the widest cell
        assert table.update_cell("a", "state", "✓ ready") and not table.update_cell("a", "state", "✓ ready")
        assert table.get_cell("b", "state").plain == "✗ failed" and str(table.get_cell("b", "state").style) == "red"
        table.update_cell("a", "state", "a state longer than eight")
        await pilot.pause()
        assert "a state…" in screen_text(app)  # a fixed width cuts with an ellipsis
        table.sort("node")
        assert table.get_row_at(0)[0].plain == "a-node-with-a-long-name"
        assert table.get_row_index("b") == 1 and "a" in table.rows
        table.clear()
        assert table.row_count == 0 and table.cursor_key is None and table.columns[0].width == len("Node")


async def test_a_control_character_in_a_cell_never_reaches_the_terminal() -> None:
    app = Holder()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.add_row("n[red]\x1b]0;x", "\x1b[2J\r", key="hostile")
        await pilot.pause()
        line = "".join(segment.text for segment in table.render_line(1))
        assert "\x1b" not in line and "\r" not in line and "[red]" in line  # shown as text, never markup
