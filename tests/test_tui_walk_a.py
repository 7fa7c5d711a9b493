"""Defects found by issue 35's third hand walk at 80×24 (walk-a: airgapped, existing-install-plain, from-nodelist,
headers-missing, host-driver-present, k3s-ubuntu, large).

headers-missing: the host check finds ``no-package-source`` (no kernel headers, no package host) under upstream. Its
fix is an answer on a later step (a ``driver.repoConfig`` ConfigMap on Driver), never work on the node, yet Nodes
held Next and said "Fix it on the node and press Check hosts, or tick 'continue anyway'": a newcomer had to
"continue anyway" to reach the fix. It holds Preview (and apply) while the plan still lacks the answer.
"""

from __future__ import annotations

from pathlib import Path

from screens.findings import standing
from tests.helpers.tui import demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_no_package_source_does_not_hold_nodes_and_says_where_it_is_fixed(tui_env: Path) -> None:
    app = demo_app(tui_env, "headers-missing")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "no-package-source on 2 nodes" in text, text
        assert "repoConfig on the Driver step" in text, text
        assert app.screen.blocker() == "", app.screen.blocker_detail()
        assert not app.screen.query_one("#override").display  # nothing for Nodes to override
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        assert on_step(app, "driver") and "nodes" not in app.state.overrides
        held = [f for f in standing(app.state) if "no-package-source" in f.message]
        assert held and held[0].step == "driver"  # still blocks Preview and apply while repoConfig is unset
        app.state.set("driver.repoConfig.configMapName", "repo-config")
        assert not [f for f in standing(app.state) if "no-package-source" in f.message]
