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

from screens.app import WizardApp
from screens.widgets.field import AnswerField
from tests.helpers.keys import keys_at_once, landed
from tests.helpers.tui import demo_app, on_step, set_field, walk_to
from tests.helpers.walk import UPSTREAM_VERSION
from tests.snapshots.plugin import wait_for


def field(app: WizardApp, field_id: str) -> AnswerField:
    return app.screen.query_one(f"#{field_id}", AnswerField)


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
