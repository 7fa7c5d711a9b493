"""Walking the TUI forward with Ctrl+N and back with Esc, step by step, whatever the scenario leaves to fill."""

from __future__ import annotations

from typing import Any

from textual.widgets import Button

from screens.flow import neighbour
from tests.helpers.tui import on_step, set_field
from tests.snapshots.plugin import wait_for

UPSTREAM_VERSION = "580.126.20"


async def forward(pilot: Any, until: str) -> None:
    """Ctrl+N until ``until`` is on screen, filling the one field a scenario leaves empty (upstream's version)."""
    app = pilot.app
    while app.state.step != until:
        here = app.state.step
        target = neighbour(here, 1, app.state)
        assert target is not None, f"walked past the last step looking for {until}"
        if here == "driver" and not app.state.get("driver.repository"):  # no public registry taken for a mirror:
            offers = app.screen.query_one("#found-row")  # take the one the step found holding the tags
            await wait_for(pilot, lambda o=offers: o.display, 30, "the registry offer")
            offers.query_one("#use-found", Button).press()
            await wait_for(pilot, lambda: bool(app.state.get("driver.repository")), 10, "the offer taken")
        if here == "driver" and not app.state.get("driver.version"):
            await set_field(pilot, "driver-version", UPSTREAM_VERSION)
        if here in ("nodes", "paths", "preview"):
            await wait_for(pilot, lambda: app.screen.blocker().endswith("anyway'") or not app.screen.blocker(), 30)
            if (
                app.screen.blocker()
            ):  # a blocking finding (nouveau, noexec /run, a missing image): the explicit override
                await pilot.click("#override")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda t=target.name: on_step(app, t), 30, f"{target.name} after {here}")


async def backward(pilot: Any) -> None:
    """Esc until Connect is on screen, one step at a time."""
    app = pilot.app
    while app.state.step != "connect":
        target = neighbour(app.state.step, -1, app.state)
        assert target is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda t=target.name: on_step(app, t), 30, f"{target.name} (back)")
        await pilot.pause(0.05)  # let the step's first work start before leaving it again
