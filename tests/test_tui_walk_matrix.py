"""The walk matrix at 80×24: every bundled scenario, forward and back, a paste, a resumed run, and where the
defaults lead to a verified install, Apply, Verify and a second apply (issue 25).

One demo cluster per scenario serves both runs (reached through its kubeconfig, as after ``gpu-wizard
demo serve``). The first run walks Connect → Apply with Ctrl+N, pastes a pull secret right after
Tab on the Driver step (it must land in "Pull secrets", not in "Image name"), goes back to Connect
with Esc and forward to Preview again (``test_tui_walk_all``'s walk, here for every scenario). The
second run, on the same HOME and cluster, must offer to resume, say where the replay stops, and land
on Preview with the first run's answers. Every wait
fails the test on timeout with the screen; nothing here can pass without the walk happening.

On the scenarios where accepting every default reaches a verified install (``APPLY_WALKS``, the
``VERIFIED`` ones of tests/test_newcomer_defaults.py), the resumed run goes on as the newcomer would: Apply
(or nothing to send, when the live objects hold the plan), Verify; then back to Driver for another version,
Preview, Apply again: "What will change" describes the new plan, its rollout is followed, Verify passes.
The same app and cluster serve every column. The ``large`` scenario (5,000 nodes) is walked in
``test_tui_walk_all``. Marked ``slow``: about ten seconds a scenario on two quiet cores, a minute more for
each apply walk (``-m "not slow"`` leaves it out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from screens.flow import step_named
from screens.widgets.field import AnswerField
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.keys import keys_at_once, landed
from tests.helpers.tui import apply_and_roll_out, back_to, connected, next_to, on_step, set_field
from tests.helpers.walk import backward, forward
from tests.snapshots.plugin import screen_text, wait_for
from wizard.bundled import asset_names

SCENARIOS = sorted(
    name.removesuffix(".yaml") for name in asset_names("scenarios") if name.endswith(".yaml") and name != "large.yaml"
)
pytestmark = pytest.mark.slow
#: Where the defaults reach a verified install: the driver versions the scenario's registry holds for every GPU
#: node's OS (the second apply takes the first that is not the one applied), or none where it holds one version
#: only (the apply and Verify, no second apply).
APPLY_WALKS: dict[str, tuple[str, ...]] = {
    "airgapped": ("570.195.03", "580.126.20"),
    "existing-install": (),  # Helm owns the policy: its second apply is tests/test_tui_apply_visits.py's Helm path
    "existing-install-plain": ("580.126.20", "570.195.03"),
    "k3s-ubuntu": ("580.126.20", "595.91.07"),
    "mig": (),
    "mixed-os": (),
    "ubuntu-upstream": ("580", "570"),
    "eks-ubuntu-mirror": (),  # one NVIDIADriver per Ubuntu release, through the Artifactory mirror  # precompiled: the registry holds both branches for its kernel
}


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


async def apply_and_verify(pilot: Any) -> None:
    """From Preview: Apply (when the live objects do not hold the plan yet), the rollout, a passing Verify."""
    app = pilot.app
    await forward(pilot, "apply")
    if app.screen.blocker():  # the plan is not in the cluster yet
        await apply_and_roll_out(pilot, expect_warning=None)
    await verified(pilot)


async def verified(pilot: Any) -> None:
    app = pilot.app
    await next_to(pilot, "verify")
    await wait_for(pilot, lambda: bool(app.state.checks) and not app.screen._verifying, 90, "verification")
    text = screen_text(app)
    assert "✓ verified" in text, text


async def second_apply(pilot: Any, versions: tuple[str, ...]) -> None:
    """Back to Driver, another version, Preview, Apply: the new plan described, sent, followed and verified."""
    app = pilot.app
    first = app.state.applied
    version = next(v for v in versions if v != app.state.get("driver.version"))
    await back_to(pilot, "driver")
    await set_field(pilot, "driver-version", version)
    await forward(pilot, "apply")
    text = screen_text(app)
    assert "What will change" in text and "What was sent" not in text, text  # this plan, not the last apply's
    rollout = str(app.screen.query_one("#rollout-state").content)
    assert "rolling out" not in rollout and "rolling out" not in text, rollout  # nothing sent yet
    assert app.screen.blocker() == "apply first (nothing is sent before you confirm)"
    await apply_and_roll_out(pilot, expect_warning=None)
    assert app.state.applied is not None and app.state.applied is not first
    assert version in json.dumps(app.state.applied_for.objects)  # the rollout followed is this plan's
    assert "ready" in str(app.screen.query_one("#rollout-state").content)
    assert app.screen.blocker() == "" and "What was sent" in screen_text(app)
    await verified(pilot)
    assert app.state.plan() is not None and app.state.plan().driver.version == version


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
        if scenario in APPLY_WALKS:  # the newcomer goes on: the defaults applied and verified, then another version
            await apply_and_verify(pilot)
            if APPLY_WALKS[scenario]:
                await second_apply(pilot, APPLY_WALKS[scenario])
