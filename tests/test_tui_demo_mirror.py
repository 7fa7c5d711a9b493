"""The TUI never offers a real mirror run on the demo cluster.

The demo's images are simulated: a click on Run mirror would copy real images from the source
registry (skopeo is installed on the test machine). The Driver step must show the mirror commands,
no Run mirror button, and a note saying why and what to do on a real cluster.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Button, Static

from screens.widgets.mirror import MirrorPanel
from tests.helpers.tui import demo_app, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_demo_driver_step_offers_no_mirror_run(tui_env: Path) -> None:
    assert shutil.which("skopeo"), "skopeo must be installed: without it the Run button is hidden anyway"
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(100, 40)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        panel = app.screen.query_one(MirrorPanel)
        commands = panel.query_one("#mirror-commands", Static)
        await wait_for(pilot, lambda: "skopeo copy" in str(commands.content), 20, "the mirror commands")
        run = panel.query_one("#mirror-run", Button)
        assert not run.display
        assert not any(b.display for b in app.screen.query(Button) if "Run mirror" in str(b.label))
        status = " ".join(str(panel.query_one("#mirror-status", Static).content).split())
        assert "demo cluster: its images are simulated, so no mirror runs from here" in status
        assert "On a real cluster, Run mirror copies these images with skopeo" in status
        panel.run_mirror()  # even a direct call (a stray key binding) copies nothing
        await pilot.pause()
        assert not panel.has_class("-running")
        assert "copying" not in screen_text(app)
