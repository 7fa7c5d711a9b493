"""A checkbox and a radio button whose state shows in the glyph, not only in its colour.

Textual draws ``▐X▌`` for a checkbox and ``▐●▌`` for a radio button whether on or off, and tells
them apart by colour alone: invisible on a monochrome terminal, to a colour-blind user, and in a
plain-text capture. These draw the mark only when the value is on.
"""

from __future__ import annotations

from textual.widgets import Checkbox, RadioButton


class Tick(Checkbox):
    """``▐X▌`` when ticked, ``▐ ▌`` when not."""

    MARK = "X"

    def on_mount(self) -> None:
        self.BUTTON_INNER = self.MARK if self.value else " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = self.MARK if self.value else " "
        super().watch_value()  # the -on class and the Changed message


class Choice(RadioButton):
    """``▐●▌`` when chosen, ``▐ ▌`` when not."""

    MARK = "●"

    def on_mount(self) -> None:
        self.BUTTON_INNER = self.MARK if self.value else " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = self.MARK if self.value else " "
        super().watch_value()  # the -on class and the Changed message
