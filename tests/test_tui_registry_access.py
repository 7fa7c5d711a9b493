"""The Driver step says how the image checks reached each registry, and where that came from."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from screens.dialogs.dialogs import ErrorDialog
from screens.widgets.registry_access import RegistryAccess
from tests.helpers.tui import demo_app, set_field, walk_to
from tests.snapshots.plugin import wait_for


async def test_driver_step_shows_where_mirrors_and_credentials_come_from(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(100, 40)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        lines = app.screen.query_one(RegistryAccess).query_one("#access-lines", Static)
        # (a check of the step's first answers may come first: wait for the one of the typed repository)
        await wait_for(
            pilot, lambda: "registry.example.com  mirror ->" in str(lines.content), 30, "the registry access lines"
        )
        text = str(lines.content)
        # the demo's kubeconfig routes the image hosts to the demo's own registry
        assert "registry.example.com  mirror -> " in text
        assert "(from the demo cluster's kubeconfig)" in text
        assert "credentials none (anonymous)" in text
        # a CA file that cannot be used is named beside the images, not in a dialog at every keystroke
        missing = tui_env / "no-such-ca.pem"
        await set_field(pilot, "registry-ca", str(missing))
        groups = app.screen.query_one("#groups", Static)
        await wait_for(
            pilot,
            lambda: (
                "TLS settings for 127.0.0.1" in str(groups.content)
                and f"CA file {missing}: cannot be read" in str(groups.content)
            ),
            30,
            "the CA file's error beside the images",
        )
        assert not isinstance(app.screen, ErrorDialog)
