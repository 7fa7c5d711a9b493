"""Keys and pastes posted all at once as a terminal driver posts them, and the wait until they have landed."""

from __future__ import annotations

from typing import Any

from textual import events

from screens.app import WizardApp
from screens.widgets.field import AnswerField
from tests.snapshots.plugin import wait_for


def keys_at_once(app: WizardApp, *keys: str, paste: str | None = None) -> None:
    """``keys`` (Textual key names), then a bracketed ``paste``, arriving together as from a fast typist."""
    driver = app._driver
    assert driver is not None
    for key in keys:
        event: events.Event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        driver.send_message(event)
    if paste is not None:
        event = events.Paste(paste)
        event.set_sender(app)
        driver.send_message(event)


async def landed(pilot: Any, app: WizardApp, expected: dict[AnswerField, str]) -> None:
    """Until each field holds its text and no key is in flight, and still then a moment later.

    The keys sent may not have reached the App yet when this starts, so it waits for the outcome, not
    for a quiet queue; keys that went elsewhere never give it, and the test fails naming what each holds.
    """

    def done() -> bool:
        return not app.input_order.busy and all(f.input.value == text for f, text in expected.items())

    for _ in range(2):
        try:
            await wait_for(pilot, done, 10, "the keys to land")
        except AssertionError:
            raise AssertionError({f.id: f.input.value for f in expected}) from None
        await pilot.pause(0.2)
