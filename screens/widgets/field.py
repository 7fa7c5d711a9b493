"""A labelled answer field: the input, a one-line hint, and the field's error right beside it.

The field knows its dotted answers path (``driver.version``) and reports edits upward with
:class:`AnswerField.Changed`; the step writes the value into the state, validates the whole plan
through ``wizard.engine.plan.Plan`` and hands each field its error with :meth:`AnswerField.show_error`.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input, Label, Static

MAX_FIELD_CHARS = 4096
"""Characters a text field takes (a path's limit, PATH_MAX): a paste past it is refused whole, so a paste
flood cannot grow a field, and each keystroke's redraw, without end (issue 37)."""


class AnswerField(Vertical):
    """``label  [input.................]`` with the hint or the error underneath."""

    DEFAULT_CSS = """
    AnswerField {
        height: auto;
        & > Horizontal { height: 1; }
        & .field-label { width: 20; color: $text; }
        & Input { width: 1fr; }
        & .field-note { height: auto; padding-left: 20; color: $text-muted; }
        & .field-note.-error { color: $error; }
        &.-invalid .field-label { color: $error; }
    }
    """

    class Changed(Message):
        """The user edited the field."""

        def __init__(self, field: AnswerField, value: str) -> None:
            self.field = field
            self.value = value
            super().__init__()

        @property
        def control(self) -> AnswerField:
            return self.field

    def __init__(
        self,
        label: str,
        path: str,
        value: str = "",
        *,
        placeholder: str = "",
        hint: str = "",
        suggestions: list[str] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id or path.replace(".", "-"))
        self.label = label
        self.path = path
        """Dotted answers path this field edits."""
        self.hint = hint
        self._value = value
        self._placeholder = placeholder
        self._suggestions = suggestions
        self._error_shown: str | None = None
        """The message :meth:`show_error` shows now ("" the hint; None: nothing shown yet)."""

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Label(self.label, classes="field-label", markup=False)
            suggester = SuggestFromList(self._suggestions, case_sensitive=False) if self._suggestions else None
            yield Input(
                self._value,
                placeholder=self._placeholder,
                compact=True,
                suggester=suggester,
                max_length=MAX_FIELD_CHARS,
            )
        yield Static(self.hint, classes="field-note", markup=False)

    @property
    def input(self) -> Input:
        """The input widget."""
        return self.query_one(Input)

    @property
    def value(self) -> str:
        """The text as typed, stripped."""
        return self.input.value.strip()

    def set_value(self, value: str) -> None:
        """Replace the text (without reporting a user edit)."""
        with self.input.prevent(Input.Changed):
            self.input.value = value

    def show_error(self, message: str) -> None:
        """Show the field's error (or the hint again when ``message`` is empty).

        The same message again changes nothing: a step shows every field's error after each keystroke,
        and each note's update laid the whole screen out again.
        """
        if message == self._error_shown:
            return
        self._error_shown = message
        note = self._note()
        if note is None:  # not yet composed (a worker's answer met the form mounting): on_mount shows it
            return
        note.update(f"✗ {message}" if message else self.hint)
        note.set_class(bool(message), "-error")
        self.set_class(bool(message), "-invalid")
        note.display = bool(message or self.hint)

    def set_hint(self, hint: str) -> None:
        """Change the hint (shown when the field has no error): what the value means now, never a stale word."""
        if hint == self.hint:
            return
        self.hint = hint
        note = self._note()
        if note is not None and not self._error_shown:
            note.update(hint)
            note.display = bool(hint)

    def _note(self) -> Static | None:
        """The note under the input; None before the field is composed."""
        return next(self.query(".field-note").results(Static), None)

    def on_mount(self) -> None:
        message, self._error_shown = self._error_shown, None
        self.show_error(message or "")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, event.value.strip()))
