"""A newcomer on hosts that already run a driver who picks a containerized mode over the ★ and applies anyway:
the operator's driver manager finds the host driver and takes every node out of the driver pods' selector.
The Apply step must say so, with the fix, as soon as the DaemonSet wants no pod, not show "0/0" until the
rollout's time runs out (30 minutes by default); the fix it names then verifies (tests/test_newcomer_defaults.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from screens.app import WizardApp
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.tui import apply_and_roll_out, connected
from tests.helpers.walk import forward
from tests.snapshots.plugin import screen_text, wait_for

pytestmark = pytest.mark.slow


async def test_apply_on_hosts_with_a_driver_names_preinstalled_at_once(
    tui_env: Path, demo_cluster: ClusterFactory
) -> None:
    demo = demo_cluster("preinstalled", step_delay=0.0)
    app = WizardApp(kubeconfig=str(demo.kubeconfig_path), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await forward(pilot, "mode")
        await wait_for(pilot, lambda: app.state.get("mode") == "preinstalled", 30, "the host check's ★ preselected")
        await pilot.click("#mode-upstream")  # the user's choice over the recommendation; Preview's override taken
        await forward(pilot, "apply")
        assert app.state.get("mode") == "upstream"
        await apply_and_roll_out(pilot, expect_warning=None)
        rollout = app.screen._rollout
        assert rollout is not None and rollout.phase == "failed", rollout
        assert "set mode: preinstalled" in rollout.message and "0/0" not in rollout.message
        text = screen_text(app)
        assert "host driver" in text, text
        await pilot.pause()
        await wait_for(pilot, lambda: "Change the plan" in screen_text(app), 30, "the advice")
        text = screen_text(app)
        assert "Esc back to the Mode step" in text and "Driver step" not in text, text
