"""Issue 35, walk b (mig, mixed-os, no-operator, preinstalled…, upgrade-in-progress at 80×24): what a
first-time installer read wrong, each pinned by a pilot test."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import wait_for


async def test_every_placeholder_on_the_driver_step_fits_its_field(tui_env: Path) -> None:
    """The "Other images from" placeholder was cut at 80 columns to "the chart's (nvcr.io, registry.k8s.io); or a
    private", and the hint below it ("toolkit, device plugin, validator, …") read on as "or a private toolkit"."""
    app = demo_app(tui_env, "mig")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await wait_for(pilot, lambda: bool(app.screen.query("#operand-registry")), 30, "the form below the fold")
        await pilot.pause()
        cut = [
            f"{field.id}: {field.placeholder!r} in {field.content_region.width} columns"
            for field in app.screen.query(Input)
            if field.display
            and field.placeholder
            and len(field.placeholder) >= field.content_region.width  # a cell for the cursor
        ]
    assert not cut, cut
