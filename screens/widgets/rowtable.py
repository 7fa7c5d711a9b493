"""A table for thousands of rows whose cost follows the rows on screen, not the rows it holds.

Textual's ``DataTable`` measures and styles every row it is given (5,000 nodes held the event loop
while a table filled, and F1 waited behind it). :class:`RowTable` is a Line-API
widget (``ScrollView`` + ``render_line``): it keeps its rows as plain text with one style per cell,
draws only the lines on screen, and adding a row is a list append plus a width update. Columns have
a fixed width, or one that grows to the widest cell seen (each cell measured once, when it is set).

What the steps use of ``DataTable`` is kept: a header that stays put, zebra stripes, a row cursor
(↑ ↓ PgUp PgDn Home End, Enter or a click selects: :class:`RowTable.RowSelected`), rows and cells by
key, sorting by a column. Cell text is never read as markup, and a cell with a control character
goes through ``wizard.engine.textsafe`` when it is drawn (only the lines on screen pay for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from wizard.engine.textsafe import printable

#: A cell as stored: its text and a Rich style string ("" for the row's own style).
Cell = tuple[str, str]
#: Spaces on each side of a cell (as ``DataTable``'s default ``cell_padding``).
PADDING = 1


@dataclass
class Column:
    """One column: its key, its title and its width in cells (without the padding)."""

    key: str
    title: str
    width: int
    auto: bool
    """The width grows to the widest cell seen."""


def as_cell(value: Any) -> Cell:
    """A ``str`` or a Rich ``Text`` as stored (a ``Text``'s own style kept, its spans not)."""
    if isinstance(value, Text):
        return value.plain, str(value.style) if value.style else ""
    return str(value), ""


class RowTable(ScrollView, can_focus=True):
    """Rows of text cells under a fixed header, drawn only where they are on screen."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"rowtable--header", "rowtable--cursor", "rowtable--even-row"}

    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .rowtable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .rowtable--header { background: $primary 70%; }  /* a 5 % tint alone showed no focus */
        }
        &:dark > .rowtable--even-row { background: $surface-darken-1 40%; }
        & > .rowtable--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .rowtable--header { background: ansi_bright_blue; color: ansi_default; }
        & > .rowtable--even-row { background: $surface-lighten-1 50%; }
        & > .rowtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first_row", "First", show=False),
        Binding("end", "last_row", "Last", show=False),
        Binding("left", "scroll_left", "Left", show=False),
        Binding("right", "scroll_right", "Right", show=False),
    ]

    class RowSelected(Message):
        """Enter or a click on a row."""

        def __init__(self, table: RowTable, key: str, index: int) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.index = index

        @property
        def control(self) -> RowTable:
            return self.table

    def __init__(
        self, *, cursor: bool = True, zebra_stripes: bool = False, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.show_cursor = cursor
        self.zebra_stripes = zebra_stripes
        self.columns: list[Column] = []
        self._column_index: dict[str, int] = {}
        self._keys: list[str] = []
        self._cells: dict[str, list[Cell]] = {}
        self._index: dict[str, int] | None = {}
        self.cursor_row = 0
        self.lines_rendered = 0
        """Row lines drawn so far (a test checks that it follows the screen, not the row count)."""

    # -- columns and rows ------------------------------------------------------------------------

    def add_column(self, title: str, *, key: str, width: int | None = None) -> None:
        """A column of ``width`` cells, or one as wide as its widest cell when ``width`` is None."""
        self._column_index[key] = len(self.columns)
        self.columns.append(Column(key, title, width if width is not None else cell_len(title), width is None))
        for cells in self._cells.values():
            cells.append(("", ""))
        self._resize()

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def rows(self) -> dict[str, list[Cell]]:
        """The rows by key (``key in table.rows``); read-only by convention."""
        return self._cells

    def add_row(self, *cells: Any, key: str) -> None:
        """One row at the end (``key`` must be new)."""
        self.add_rows([(key, cells)])

    def add_rows(self, rows: Iterable[tuple[str, Iterable[Any]]]) -> None:
        """Rows at the end, in one go: one size update and one refresh, whatever their number."""
        widths = [c.width for c in self.columns]
        autos = [c.auto for c in self.columns]
        index = self._index
        for key, values in rows:
            if key in self._cells:
                raise ValueError(f"row key {key!r} is already in the table")
            cells = [as_cell(v) for v in values]
            for number, (text, _) in enumerate(cells):
                if autos[number]:
                    widths[number] = max(widths[number], cell_len(text))
            if index is not None:
                index[key] = len(self._keys)
            self._keys.append(key)
            self._cells[key] = cells
        for column, width in zip(self.columns, widths, strict=True):
            column.width = width
        self._resize()
        self.refresh()

    def update_cell(self, key: str, column: str, value: Any) -> bool:
        """Set one cell; False (and nothing redrawn) when it already held that."""
        cell = as_cell(value)
        cells = self._cells[key]
        number = self._column_index[column]
        if cells[number] == cell:
            return False
        cells[number] = cell
        described = self.columns[number]
        if described.auto and cell_len(cell[0]) > described.width:
            described.width = cell_len(cell[0])
            self._resize()
            self.refresh()
        else:
            self.refresh_row(key)
        return True

    def get_cell(self, key: str, column: str) -> Text:
        text, style = self._cells[key][self._column_index[column]]
        return Text(text, style=style)

    def get_row(self, key: str) -> list[Text]:
        return [Text(text, style=style) for text, style in self._cells[key]]

    def get_row_at(self, index: int) -> list[Text]:
        return self.get_row(self._keys[index])

    def get_row_index(self, key: str) -> int:
        if self._index is None:
            self._index = {k: number for number, k in enumerate(self._keys)}
        return self._index[key]

    def clear(self) -> None:
        """Every row gone (the columns stay, auto widths back to their titles)."""
        self._keys, self._cells, self._index = [], {}, {}
        for column in self.columns:
            if column.auto:
                column.width = cell_len(column.title)
        self.cursor_row = 0
        self.scroll_to(0, 0, animate=False)
        self._resize()
        self.refresh()

    def sort(self, column: str, *, key: Callable[[str], Any] = str, reverse: bool = False) -> None:
        """Order the rows by the text of ``column`` (the cursor keeps its position, as ``DataTable``'s)."""
        number = self._column_index[column]
        self._keys.sort(key=lambda k: key(self._cells[k][number][0]), reverse=reverse)
        self._index = None
        self.refresh()

    @property
    def cursor_key(self) -> str | None:
        """The key of the row under the cursor (None in an empty table)."""
        return self._keys[self.cursor_row] if self._keys else None

    def move_cursor(self, *, row: int) -> None:
        """The cursor onto row ``row`` (clamped), scrolled into view."""
        old = self.cursor_row
        self.cursor_row = max(0, min(row, len(self._keys) - 1))
        if old != self.cursor_row:
            self._refresh_index(old)
            self._refresh_index(self.cursor_row)
        self._scroll_cursor_into_view()
        # again once laid out: right after rows were added the scroll range is still the old one
        self.call_after_refresh(self._scroll_cursor_into_view)

    # -- drawing ---------------------------------------------------------------------------------

    def _resize(self) -> None:
        width = sum(c.width + 2 * PADDING for c in self.columns)
        self.virtual_size = Size(width, len(self._keys) + 1)  # + the header line

    def refresh_row(self, key: str) -> None:
        """Redraw the line of ``key`` if it is on screen."""
        self._refresh_index(self.get_row_index(key))

    def _refresh_index(self, index: int) -> None:
        line = index + 1 - round(self.scroll_offset.y)
        if 1 <= line < self.size.height:
            self.refresh_line(index + 1)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            style = self.get_component_rich_style("rowtable--header")
            strip = self._strip([(c.title, "") for c in self.columns], style)
        else:
            index = y - 1 + scroll_y
            if index >= len(self._keys):
                return Strip.blank(width, self.rich_style)
            self.lines_rendered += 1
            style = self.rich_style
            if self.zebra_stripes and index % 2 == 0:
                style = style + self.get_component_rich_style("rowtable--even-row")
            cursor = self.show_cursor and index == self.cursor_row
            strip = self._strip(self._cells[self._keys[index]], style, cursor)
            if cursor:  # the cursor spans the whole line, past the last column
                style = style + self.get_component_rich_style("rowtable--cursor")
        return strip.crop_extend(scroll_x, scroll_x + width, style)

    def _strip(self, cells: list[Cell], style: Style, cursor: bool = False) -> Strip:
        cursor_style = self.get_component_rich_style("rowtable--cursor") if cursor else None
        segments = []
        pad = " " * PADDING
        for column, (text, cell_style) in zip(self.columns, cells, strict=False):
            if not text.isprintable():  # ESC, CR, newline from a hostile name: never to the terminal
                text = printable(text)
            if cell_len(text) > column.width:
                text = set_cell_size(text, column.width - 1) + "…" if column.width > 1 else text[:1]
            else:
                text = set_cell_size(text, column.width)
            own = style + Style.parse(cell_style) if cell_style else style
            if cursor_style is not None:
                own = own + cursor_style
            segments.append(Segment(pad + text + pad, own))
        return Strip(segments)

    # -- keys and mouse --------------------------------------------------------------------------

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        top, rows = round(self.scroll_offset.y), self._page()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False)
        elif self.cursor_row >= top + rows:
            self.scroll_to(y=self.cursor_row - rows + 1, animate=False)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - self._page())

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + self._page())

    def action_first_row(self) -> None:
        self.move_cursor(row=0)

    def action_last_row(self) -> None:
        self.move_cursor(row=len(self._keys) - 1)

    def action_select_cursor(self) -> None:
        if self.show_cursor and self._keys:
            self.post_message(self.RowSelected(self, self._keys[self.cursor_row], self.cursor_row))

    async def _on_click(self, event: events.Click) -> None:
        index = event.y - 1 + round(self.scroll_offset.y)
        if event.y >= 1 and 0 <= index < len(self._keys):
            self.move_cursor(row=index)
            self.action_select_cursor()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
