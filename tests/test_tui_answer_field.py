"""An answer field told its error while it is still being mounted (a worker's answer meeting the Driver step's
form as it mounts below the fold) keeps the error and shows it once composed, instead of failing."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from screens.widgets.field import AnswerField


class _Form(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("form")


async def test_an_error_told_before_the_field_is_composed_is_shown_once_it_is() -> None:
    app = _Form()
    async with app.run_test(size=(80, 24)) as pilot:
        field = AnswerField("Registry CA", "driver.registryCA", hint="a PEM file")
        waiting = app.mount(field)  # attached now, composed later: the window a worker's answer can meet
        field.show_error("no such file")  # the old field looked for its note here and raised NoMatches
        await waiting
        await pilot.pause()
        note = field.query_one(".field-note", Static)
        assert "✗ no such file" in str(note.render())
        assert note.has_class("-error") and field.has_class("-invalid")
        field.show_error("")
        await pilot.pause()
        assert str(note.render()) == "a PEM file" and not note.has_class("-error")
