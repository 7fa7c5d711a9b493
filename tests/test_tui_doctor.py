"""The node doctor in the TUI: the Nodes step's host check (on its own once the nodes are known) shows the host findings grouped (one line per
finding, its nodes named) at 80×24, and they travel to Preview's findings judged against the current mode."""

from __future__ import annotations

from pathlib import Path

from screens.findings import host_groups, plan_findings
from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_check_hosts_shows_grouped_findings_that_follow_the_mode(tui_env: Path) -> None:
    app = demo_app(tui_env, "host-driver-present")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-h100-03" in screen_text(app), 30, "the node table")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check (on its own)")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        # judged for the recommended mode: pre-installed, since a host driver is loaded on two of the three
        assert "✗ no-host-driver on 1 node (gpu-h100-03)" in text, text
        assert "hosts checked: driver on 2/3; Mode recommends Pre-installed" in text, text
        assert [(g.check, g.nodes) for g in host_groups(app.state)] == [("no-host-driver", ("gpu-h100-03",))]
        app.state.set("mode", "precompiled")  # the same host states, judged again for the new mode
        assert [(g.check, g.nodes) for g in host_groups(app.state)] == [
            ("host-driver-loaded", ("gpu-h100-01", "gpu-h100-02"))
        ]
        (finding,) = [f for f in plan_findings(app.state) if f.message.startswith("host-driver-loaded")]
        assert finding.blocking and finding.step == "mode" and "set mode: preinstalled" in finding.hint


async def test_operatortype_answers_reach_the_mode_and_f1_explains_both_words(tui_env: Path) -> None:
    """The seed's word: ``operatortype: preinstalled`` in answers selects Pre-installed, is saved back as ``mode``
    and never shown; F1 on the Mode step explains both words. (Never rendered: tests/test_answers.py.)"""
    from screens.app import WizardApp
    from screens.dialogs import HelpDialog
    from tests.helpers.tui import next_to, on_step

    answers = tui_env / "answers.yaml"
    answers.write_text("version: 1\noperatortype: preinstalled  # as NVIDIA's documents say\n", encoding="utf-8")
    app = WizardApp(demo="preinstalled", answers=str(answers), step_delay=0.0, report_dir=tui_env, replay=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await next_to(pilot, "mode")
        assert on_step(app, "mode") and app.state.get("mode") == "preinstalled"
        assert "operatortype" not in screen_text(app)
        saved = answers.read_text(encoding="utf-8")  # each step saves the answers as it is left
        assert "mode: preinstalled" in saved and "operatortype:" not in saved
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the help")
        assert isinstance(app.screen, HelpDialog)
        text = app.screen.text
        assert "operatortype=preinstalled" in text and "Pre-installed" in text
