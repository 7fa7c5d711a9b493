"""The Driver step and Preview on an unpublished precompiled tuple (issue 35, item 5, defect 7): the mirror plan
offers no copy of what no source holds, and names the way forward instead."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from screens.widgets.mirror import MirrorPanel
from tests.helpers.tui import demo_app, set_field, walk_to
from tests.snapshots.plugin import wait_for

NEW_KERNEL = "5.14.21-150500.55.171-default"


async def test_the_mirror_panel_offers_no_copy_of_an_image_no_source_holds(tui_env: Path) -> None:
    app = demo_app(tui_env, "missing-tuple")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: bool(app.state.images), 30, "the registry check")
        panel = app.screen.query_one(MirrorPanel)
        text = str(panel.query_one("#mirror-commands", Static).render())
        await wait_for(pilot, lambda: "not copied" in str(panel.query_one("#mirror-commands", Static).render()), 10)
        text = str(panel.query_one("#mirror-commands", Static).render())
        assert all(NEW_KERNEL not in item.target for item in panel._items), [i.target for i in panel._items]
        assert f"check-kernel {NEW_KERNEL}" in text.replace("\n", "")
        assert "skopeo copy" not in panel._script.split("# nodes: gpu-b-01", 1)[1].split("\n# nodes:", 1)[0].replace(
            "#   skopeo copy", ""
        )


async def test_the_driver_step_offers_the_build_recipe_for_an_ubuntu_kernel_without_an_image(tui_env: Path) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await wait_for(pilot, lambda: bool(app.state.images), 30, "the registry check")
        await wait_for(pilot, lambda: app.screen.query_one("#support").display, 10, "the support request")
        text = str(app.screen.query_one("#support-text", Static).content)
        assert "Build recipe: NVIDIA's driver container builds precompiled ubuntu22.04 images" in text
        assert "KERNEL_VERSION=5.15.0-1063-nvidia" in text and "build-signed_ubuntu22.04-" in text
        assert "docker push REGISTRY/driver:580-5.15.0-1063-nvidia-ubuntu22.04" in text
        assert "Node:                 gpu-h100-03" in text
