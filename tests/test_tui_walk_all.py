"""Every step can be left and re-entered without an error, on the in-process demo and at 5,000 nodes (issue 16).

The wizard walks forward with Ctrl+N from Connect to Apply, back with Esc to Connect, and forward again to
Preview: each screen is rebuilt from the state, twice. Nothing is applied here (the apply, rollout and
Verify walks are in ``test_tui_flows``). Here the walk runs on the in-process demo (no kubeconfig at all),
one scenario per driver mode: every bundled scenario takes the same walk through its kubeconfig, as
``gpu-wizard --kubeconfig`` would after ``gpu-wizard demo serve``, in ``test_tui_walk_matrix`` (the
screens are the same; only the connection differs). The ``large`` scenario (5,000 nodes) walks forward
only: its discovery alone would make the back-and-forth cost seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from screens.app import WizardApp
from tests.helpers.tui import connected, on_step
from tests.helpers.walk import backward, forward
from tests.snapshots.plugin import wait_for

pytestmark = pytest.mark.slow

#: In process: one scenario per driver mode (test_tui_walk_matrix walks every scenario through its kubeconfig).
SCENARIOS = ["sle-micro-precompiled", "airgapped", "preinstalled"]


async def walk(app: WizardApp, back_and_forth: bool) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await forward(pilot, "apply")
        if back_and_forth:
            await backward(pilot)
            await wait_for(pilot, lambda: app.state.preflight is not None, 30, "the preflight again")
            await forward(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        # where the walk ended (issue 26: `return_value in (None, 0)` of an app that never exits held always)
        assert on_step(app, "preview" if back_and_forth else "apply")


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_walk_forward_and_back_in_process(tui_env: Path, scenario: str) -> None:
    await walk(WizardApp(demo=scenario, step_delay=0.0, report_dir=tui_env), back_and_forth=True)


async def test_walk_forward_on_5000_nodes(tui_env: Path) -> None:
    await walk(WizardApp(demo="large", step_delay=0.0, report_dir=tui_env), back_and_forth=False)
