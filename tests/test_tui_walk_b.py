"""Issue 35, walk b (mig, mixed-os, no-operator, preinstalled…, upgrade-in-progress at 80×24): what a
first-time installer read wrong, each pinned by a pilot test."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


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


async def test_a_host_finding_that_holds_no_apply_is_no_red_cross_on_nodes(tui_env: Path) -> None:
    """preinstalled-no-dkms: Nodes showed "✗ driver-not-at-boot …" (read as blocking) while Next went on and Preview,
    the Apply confirmation and Verify called the same finding a warning ("! …")."""
    app = demo_app(tui_env, "preinstalled-no-dkms")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "driver-not-at-boot" in screen_text(app), 60, "the host check's finding")
        line = next(row for row in screen_text(app).splitlines() if "driver-not-at-boot" in row)
        assert line.lstrip().startswith("! driver-not-at-boot on 2 nodes"), line
        assert app.screen.blocker() == ""  # and it holds no step, as before


async def test_a_release_line_the_running_operator_is_not_on_is_refused_on_mode(tui_env: Path) -> None:
    """preinstalled-old-branch: the Nodes finding's fix "or target an operator release that supports 570" was taken
    on Mode (v25.10.1, which lists 570) while v26.7.0 kept running: the finding disappeared, Preview said "no
    warnings" and the apply went through, where ``gpu-wizard apply`` refuses that plan in preflight ("✗ release")."""
    from textual.widgets import Select, Static

    app = demo_app(tui_env, "preinstalled-old-branch")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        mode = app.screen
        assert mode.blocker() == ""  # the running release, as the defaults have it
        mode.query_one("#release", Select).value = "v25.10.1"
        await pilot.pause()
        said = " ".join(str(mode.query_one("#release-note", Static).content).split())
        assert said.startswith("✗ the cluster runs GPU Operator v26.7.0, not v25.10.1: apply refuses"), said
        assert mode.blocker().startswith("operator.version: the cluster runs GPU Operator v26.7.0"), mode.blocker()
        mode.query_one("#release", Select).value = "v26.7.0"
        await pilot.pause()
        assert mode.blocker() == ""
