"""The Mode step suggests from what is known, and says when it does not know (issue 25).

A host driver already installed makes Pre-installed the mode; before the operator runs, only a host check
(nvidia-smi on each GPU host, a probe pod per node) can tell. Until one ran, and unless a label or the live
ClusterPolicy tells, no mode gets the ★: the step says what is not known and offers the check; what it
finds then decides the ★, and the mode the step had chosen follows (never one the user chose). Pilot at 80×24.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def _words(text: str) -> str:
    return " ".join(text.split())


async def test_a_preinstalled_cluster_gets_no_star_until_its_hosts_are_checked(tui_env: Path) -> None:
    app = demo_app(tui_env, "preinstalled")  # a host driver on both GPU nodes; no ClusterPolicy, no label yet
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        if app.state.host_checked:  # Nodes' own check finished before Next: forget it, as if Nodes was left early
            app.state.host_checked, app.state.host_states, app.state.host_drivers = "", {}, {}
            app.screen._show_recommendation()
            await pilot.pause()
        text = _words(screen_text(app))
        assert "★ suggested" not in text and "★ recommended" not in text, text  # was "Upstream ★ suggested"
        assert "Not known yet whether the GPU hosts already run a driver (then Pre-installed;" in text, text
        await pilot.click("#mode-host-check")
        await wait_for(pilot, lambda: app.state.get("mode") == "preinstalled", 60, "the host check's finding")
        await wait_for(pilot, lambda: "Pre-installed ★ recommended" in _words(screen_text(app)), 10, "the ★")
        text = _words(screen_text(app))
        assert "nvidia-smi passed on every GPU node's host (driver 580.126.20)" in text, text
        assert "Upstream ★" not in text and "Not known yet" not in text


async def test_a_mode_the_user_chose_is_kept_when_the_check_finds_none(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")  # no host driver: the check confirms the OS's suggestion
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-upstream")
        if app.screen.query_one("#mode-host-check").display:  # Nodes was left before its own check finished
            await pilot.click("#mode-host-check")
        # nvcr.io holds the nodes' precompiled tag: the ★ goes there once the registry is read
        await wait_for(pilot, lambda: "Precompiled ★ recommended" in _words(screen_text(app)), 60, "the check")
        assert app.state.get("mode") == "upstream"  # the user's choice, not replaced
        assert not app.screen.query_one("#mode-host-check").display
