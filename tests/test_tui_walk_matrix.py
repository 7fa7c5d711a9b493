"""The walk matrix at 80×24: every bundled scenario, forward and back, a paste, then a resumed run (issue 25).

One demo cluster per scenario serves both runs (reached through its kubeconfig, as after ``gpu-wizard
demo serve``). The first run walks Connect → Apply with Ctrl+N, pastes a pull secret right after
Tab on the Driver step (it must land in "Pull secrets", not in "Image name"), goes back to Connect
with Esc and forward to Preview again (``test_tui_walk_all``'s walk, here for every scenario). The
second run, on the same HOME and cluster, must offer to resume, say where the replay stops, and land
on Preview with the first run's answers. Every wait
fails the test on timeout with the screen; nothing here can pass without the walk happening.
The ``large`` scenario (5,000 nodes) is walked in ``test_tui_walk_all``. Marked ``slow``: about
ten seconds a scenario on two quiet cores (``-m "not slow"`` leaves it out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from screens.flow import step_named
from screens.widgets.field import AnswerField
from tests.fixtures_demo import ClusterFactory
from tests.helpers.keys import keys_at_once, landed
from tests.helpers.tui import connected, on_step
from tests.helpers.walk import backward, forward
from tests.snapshots.plugin import wait_for
from wizard.bundled import asset_names

SCENARIOS = sorted(
    name.removesuffix(".yaml") for name in asset_names("scenarios") if name.endswith(".yaml") and name != "large.yaml"
)
pytestmark = pytest.mark.slow


async def paste_after_tab(pilot: Any) -> None:
    """On Driver: Tab from "Image name" and paste at once; the secret lands in "Pull secrets", then is removed."""
    app = pilot.app
    image = app.screen.query_one("#driver-image", AnswerField)
    secrets = app.screen.query_one("#driver-imagePullSecrets", AnswerField)
    name, before = image.input.value, secrets.input.value
    image.input.focus()
    await pilot.pause()
    keys_at_once(app, "tab", "end", paste=",walk-secret")
    await landed(pilot, app, {image: name, secrets: f"{before},walk-secret"})
    keys_at_once(app, *["backspace"] * len(",walk-secret"))  # back to the scenario's own answer
    await landed(pilot, app, {image: name, secrets: before})


async def first_run(pilot: Any) -> Any:
    """Connect → Driver (the paste) → Apply, Esc back to Connect, forward to Preview again; the plan."""
    app = pilot.app
    await connected(pilot)
    await forward(pilot, "mode")
    if step_named("driver").applies(app.state):
        await forward(pilot, "driver")
        await paste_after_tab(pilot)
    await forward(pilot, "apply")  # every step, Apply too, is left and entered again (test_tui_walk_all's walk)
    await backward(pilot)
    await wait_for(pilot, lambda: app.state.preflight is not None, 30, "the preflight again")
    await forward(pilot, "preview")
    await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the dry-run")
    plan = app.state.plan()
    assert plan is not None
    return plan


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_walk_forward_back_paste_and_resume(tui_env: Path, demo_cluster: ClusterFactory, scenario: str) -> None:
    demo = demo_cluster(scenario, step_delay=0.0)
    kubeconfig = str(demo.kubeconfig_path)
    app = WizardApp(kubeconfig=kubeconfig, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        plan = await first_run(pilot)
    saved = (tui_env / ".config" / "gpu-wizard" / "answers.yaml").read_text()
    assert "walk-secret" not in saved

    again = WizardApp(kubeconfig=kubeconfig, report_dir=tui_env)
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(again.screen, ConfirmDialog), 60, "the offer to resume")
        assert "stopped at **Preview**" in again.screen.body and "stops at **Preview**" in again.screen.body
        await pilot.click("#yes")
        await wait_for(pilot, lambda: on_step(again, "preview"), 90, "the replay to stop at Preview")
        assert again.state.plan() == plan  # the same answers, none lost or defaulted
