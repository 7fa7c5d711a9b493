"""Paths' "Restore defaults" checks the restored folders at once (issue 35's walk, k3s-suse-helm).

The Helm install's toolkit folder /usr/local/nvidia is read-only on SUSE Linux Micro; the check failed and named the
default (/run/nvidia/toolkit-install). "Restore defaults" set it, cleared the results and held nothing: the newcomer
saw "press Check on nodes" and could go on unchecked.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tui import demo_app, past_nodes
from tests.snapshots.plugin import wait_for


async def test_restore_defaults_checks_the_restored_paths(tui_env: Path) -> None:
    app = demo_app(tui_env, "k3s-suse-helm")
    async with app.run_test(size=(80, 24)) as pilot:
        # the read-only /usr/local is found on Nodes with the defaults' folders (overridden there to go on), and
        # Paths shows that answer (pre-installed: Driver is skipped)
        await past_nodes(pilot, "mode", "paths")
        failed = lambda: any(c.node and not c.ok for c in app.state.path_checks or [])  # noqa: E731
        await wait_for(pilot, failed, 60, "the failed check")
        await pilot.click("#defaults")
        assert app.state.get("toolkit.installDir") == "/run/nvidia/toolkit-install"
        # the summary line may sit above the fold at 80×24 (the table scrolls): read the checks themselves
        restored = lambda: any("usable on all 2 nodes" in c.message for c in app.state.path_checks or [])  # noqa: E731
        await wait_for(pilot, restored, 60, "the check of the defaults")
        assert app.screen.blocker() == ""
