"""Defects found by issue 35's third hand walk at 80×24 (walk-a: airgapped, existing-install-plain, from-nodelist,
headers-missing, host-driver-present, k3s-ubuntu, large).

headers-missing: the host check finds ``no-package-source`` (no kernel headers, no package host) under upstream. Its
fix is an answer on a later step (a ``driver.repoConfig`` ConfigMap on Driver), never work on the node, yet Nodes
held Next and said "Fix it on the node and press Check hosts, or tick 'continue anyway'": a newcomer had to
"continue anyway" to reach the fix. It holds Preview (and apply) while the plan still lacks the answer.

from-nodelist: the Driver step's offer "Use registry.example.com/mlops · 580.126.09.1" left its note ~10 columns
beside the button at 80 columns: "holds", "every", "tag" on three lines.

airgapped: the Catalog listed 570.195.03 beside 580.126.20, both "(in registry.airgap.local/nvidia)", though
operator v26.7.0 does not support branch 570: picked, the field warned only afterwards.
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button

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
        await wait_for(pilot, lambda: app.state.precompiled_tags is not None, 30, "the registry's tags")
        (finding,) = [f for f in standing(app.state) if "no-package-source" in f.message]
        assert "or push or mirror " in finding.hint and "then use mode: precompiled" in finding.hint, finding.hint
        app.state.set("driver.repoConfig.configMapName", "repo-config")
        assert not [f for f in standing(app.state) if "no-package-source" in f.message]


async def test_the_registry_offer_keeps_its_note_on_one_line_at_80_columns(tui_env: Path) -> None:
    app = demo_app(tui_env, "from-nodelist")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        use = app.screen.query_one("#use-found", Button)
        await wait_for(pilot, lambda: use.display and app.screen.query_one("#found-row").display, 20, "the find")
        await pilot.pause(0.3)
        lines = screen_text(app).splitlines()
        assert any("Use registry.example.com/mlops · 580.126.09.1" in line for line in lines), "\n".join(lines)
        assert any("holds every tag" in line for line in lines), "\n".join(lines)


async def test_the_catalog_marks_a_version_whose_branch_the_release_does_not_support(tui_env: Path) -> None:
    app = demo_app(tui_env, "airgapped")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await wait_for(pilot, lambda: bool(app.state.registry_versions), 30, "the registry's versions")
        await pilot.click("#catalog")
        await pilot.pause(0.5)
        text = screen_text(app)
        assert "580.126.20  (in registry.airgap.local/nvidia)" in text, text
        assert "570.195.03  ! branch 570 unsupported by v26.7.0" in text, text
