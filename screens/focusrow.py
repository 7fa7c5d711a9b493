"""Where the focus is, shown on the field's own label as well as on the field.

A form at 80×24 is made of one-line rows, ``Label  [field......]``. A compact Input, Select or
Checkbox has no border to light up, so its own focus style is a change of background that a newcomer
can miss (the Driver step's walk: Tab went from the version to "Copy from", whose text the next
keystroke replaced). The screen therefore also marks the focused field's row label with the
``-field-focus`` class (styled in ``assets/styles/app.tcss``): the label the eye reads first turns into a
block in the theme's primary colour.

Textual's ``:focus-within`` cannot do this here: it restyles on a focus change only the subtrees of
ancestors that carry a ``:focus-within`` rule themselves, so a rule on the label stayed lit after the
focus had moved on.
"""

from __future__ import annotations

from typing import cast

from textual import events
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Label

#: The class a row label carries while its field has the focus.
FOCUSED_LABEL = "-field-focus"


def row_label(widget: Widget) -> Label | None:
    """The label of the row ``widget`` is the field of (``Label`` first in a ``Horizontal``), if any.

    Buttons are left out: they show their own focus plainly, and a row's label names its field, not
    the button beside it (Connect's "Context  [select]  Connect").
    """
    if isinstance(widget, Button):
        return None
    row = widget.parent
    if not isinstance(row, Horizontal) or not row.children:
        return None
    first = row.children[0]
    return first if isinstance(first, Label) and first is not widget else None


class MarksFocusedRow:
    """A screen mixin: the focused field's row label carries :data:`FOCUSED_LABEL`."""

    _focused_label: Label | None = None

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._follow_focus()

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._follow_focus()

    def _follow_focus(self) -> None:
        """Mark the label of the widget focused now.

        Not the event's widget: focus and blur events climb to the screen through different parents,
        so two quick Tabs can deliver the first focus after the second (the wrong label would stay lit).
        """
        focused = cast("Screen[object]", self).focused
        self._mark_focused_label(row_label(focused) if focused is not None else None)

    def _mark_focused_label(self, label: Label | None) -> None:
        if label is self._focused_label:
            return
        if self._focused_label is not None:
            self._focused_label.remove_class(FOCUSED_LABEL)
        self._focused_label = label
        if label is not None:
            label.add_class(FOCUSED_LABEL)
