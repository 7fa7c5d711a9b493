"""Keys and pastes land in the field shown focused, however fast they come (issue 25 item 4, issue 28).

Found at 80×24 in tmux: a pull secret pasted right after Tab went into "Image name"
("nvidia-driverregcred") and "Pull secrets" stayed empty, highlighted as focused. Textual posts a key to
the widget focused when the App reads it, and Tab moves the focus only once it has climbed from the
field to the App: keys read in between went to the field being left. The keys here are posted the
way the terminal driver posts them (all at once), not with ``pilot.press``, which lets the app settle
after each key and never shows the race. The same in a real terminal, under load: ``test_tui_tmux_input``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import events

from screens.app import WizardApp
from screens.widgets.field import AnswerField
from tests.snapshots.plugin import wait_for
from tests.test_tui_flows import demo_app, on_step, set_field, walk_to
from tests.test_tui_walk_all import UPSTREAM_VERSION


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


def field(app: WizardApp, field_id: str) -> AnswerField:
    return app.screen.query_one(f"#{field_id}", AnswerField)


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


async def on_driver(pilot: Any) -> tuple[AnswerField, AnswerField]:
    app = pilot.app
    await walk_to(pilot, "nodes", "mode", "driver")
    image, secrets = field(app, "driver-image"), field(app, "driver-imagePullSecrets")
    image.input.focus()
    await pilot.pause()
    return image, secrets


async def test_keys_typed_right_after_tab_go_to_the_next_field(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        image, secrets = await on_driver(pilot)
        name = image.input.value
        keys_at_once(app, "tab", *"regcred", "shift+tab", "end", *"-x", "tab", "end", ",", *"other")
        await landed(pilot, app, {image: f"{name}-x", secrets: "regcred,other"})
        assert app.state.get("driver.imagePullSecrets") == ["regcred", "other"]
        assert app.focused is secrets.input


async def test_a_paste_right_after_tab_goes_to_the_next_field(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        image, secrets = await on_driver(pilot)
        name = image.input.value
        keys_at_once(app, "tab", paste="regcred")  # tmux paste-buffer -p: one Paste event
        await landed(pilot, app, {image: name, secrets: "regcred"})
        keys_at_once(app, "shift+tab", "tab", "end", paste=",site-pull")
        await landed(pilot, app, {image: name, secrets: "regcred,site-pull"})


async def test_keys_typed_while_a_step_is_left_go_to_the_step_shown_next(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await on_driver(pilot)
        await set_field(pilot, "driver-version", UPSTREAM_VERSION)  # required upstream
        source = app.state.get("driver.source")
        keys_at_once(app, "ctrl+n", "end", *"/x")
        await wait_for(pilot, lambda: on_step(app, "paths"), 20, "the Paths step")
        toolkit = field(app, "toolkit-installDir")
        await wait_for(pilot, lambda: toolkit.input.value.endswith("/x"), 10, "the keys on Paths")
        assert app.state.get("driver.source") == source  # nothing reached the Driver step being left
