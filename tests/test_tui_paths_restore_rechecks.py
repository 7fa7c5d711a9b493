"""Paths' "Restore defaults" checks the restored folders at once (issue 35's walk, k3s-suse-helm).

The Helm install's toolkit folder /usr/local/nvidia is read-only on SUSE Linux Micro; the check failed and named the
default (/run/nvidia/toolkit-install). "Restore defaults" set it, cleared the results and held nothing: the newcomer
saw "press Check on nodes" and could go on unchecked.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_restore_defaults_checks_the_restored_paths(tui_env: Path) -> None:
    app = demo_app(tui_env, "k3s-suse-helm")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await next_to(pilot, "paths")  # pre-installed: Driver is skipped
        blocked = "path check failed: fix or tick 'continue anyway'"
        await wait_for(pilot, lambda: app.screen.blocker() == blocked, 60, "the failed check")
        await pilot.click("#defaults")
        assert app.state.get("toolkit.installDir") == "/run/nvidia/toolkit-install"
        await wait_for(pilot, lambda: "usable on all 2 nodes" in screen_text(app), 60, "the check of the defaults")
        assert app.screen.blocker() == ""
