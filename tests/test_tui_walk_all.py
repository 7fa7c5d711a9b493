"""Every step can be left and re-entered in every demo scenario without an error (issue 16).

For each scenario, the wizard walks forward with Ctrl+N from Connect to Apply, back with Esc to
Connect, and forward again to Preview: each screen is rebuilt from the state, twice. Nothing is
applied here (the apply, rollout and Verify walks are in ``test_tui_flows``). The same walk runs
on the in-process demo (no kubeconfig at all) and on a demo cluster reached through its kubeconfig,
as ``gpu-wizard --kubeconfig`` would after ``gpu-wizard demo serve`` (one scenario per driver mode,
to keep the file near a minute on two cores). The ``large`` scenario
(5,000 nodes) walks forward only: its discovery alone would make the back-and-forth cost seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button

from screens.app import WizardApp
from screens.flow import neighbour
from tests.fixtures_demo import ClusterFactory
from tests.snapshots.plugin import wait_for
from tests.test_tui_flows import connected, on_step, set_field

SCENARIOS = [
    "airgapped",
    "existing-install",
    "from-nodelist",
    "missing-tuple",
    "mixed-os",
    "noexec-run",
    "preinstalled",
    "sle-micro-precompiled",
    "ubuntu-upstream",
]
#: Through a kubeconfig: one scenario per driver mode (the screens are the same; only the connection differs).
KUBECONFIG_SCENARIOS = ["sle-micro-precompiled", "airgapped", "preinstalled"]
#: A driver version every upstream scenario publishes (the field is required in upstream mode).
UPSTREAM_VERSION = "580.126.20"


async def forward(pilot: Any, until: str) -> None:
    """Ctrl+N until ``until`` is on screen, filling the one field a scenario leaves empty (upstream's version)."""
    app = pilot.app
    while app.state.step != until:
        here = app.state.step
        target = neighbour(here, 1, app.state)
        assert target is not None, f"walked past the last step looking for {until}"
        if here == "driver" and not app.state.get("driver.repository"):  # no public registry taken for a mirror:
            offers = app.screen.query_one("#found-row")  # take the one the step found holding the tags
            await wait_for(pilot, lambda o=offers: o.display, 30, "the registry offer")
            offers.query_one("#use-found", Button).press()
            await wait_for(pilot, lambda: bool(app.state.get("driver.repository")), 10, "the offer taken")
        if here == "driver" and not app.state.get("driver.version"):
            await set_field(pilot, "driver-version", UPSTREAM_VERSION)
        if here in ("paths", "preview"):
            await wait_for(pilot, lambda: app.screen.blocker().endswith("anyway'") or not app.screen.blocker(), 30)
            if app.screen.blocker():  # a blocking finding (noexec /run, a missing image): the explicit override
                await pilot.click("#override")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda t=target.name: on_step(app, t), 30, f"{target.name} after {here}")


async def backward(pilot: Any) -> None:
    """Esc until Connect is on screen, one step at a time."""
    app = pilot.app
    while app.state.step != "connect":
        target = neighbour(app.state.step, -1, app.state)
        assert target is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda t=target.name: on_step(app, t), 30, f"{target.name} (back)")
        await pilot.pause(0.05)  # let the step's first work start before leaving it again


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


@pytest.mark.parametrize("scenario", KUBECONFIG_SCENARIOS)
async def test_walk_forward_and_back_through_a_kubeconfig(
    tui_env: Path, demo_cluster: ClusterFactory, scenario: str
) -> None:
    demo = demo_cluster(scenario, step_delay=0.0)
    await walk(WizardApp(kubeconfig=str(demo.kubeconfig_path), report_dir=tui_env), back_and_forth=True)


async def test_walk_forward_on_5000_nodes(tui_env: Path) -> None:
    await walk(WizardApp(demo="large", step_delay=0.0, report_dir=tui_env), back_and_forth=False)
