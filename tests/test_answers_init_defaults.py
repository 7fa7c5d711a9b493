"""``gpu-wizard answers init`` on a cluster writes the answers a newcomer gets by pressing Next in the TUI (issue 35,
item 7): for every bundled demo scenario, the file (validated through the plan model) equals the TUI's answers
after Connect → Nodes → Mode → Driver (the registry a newcomer must take with "Use" when no target is known)
→ Paths. Both take their defaults from ``wizard.engine.defaults``; this test is what keeps them one.
``large`` (5,000 nodes) is left out: its discovery alone costs the walk a minute, and its nodes are
``ubuntu-upstream``'s kind (walked here).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from textual.widgets import Button

from tests.helpers.tui import demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import wait_for
from wizard.cli.main import main
from wizard.demo.scenarios.scenario import scenario_names
from wizard.engine.plan import Plan

SCENARIOS = [name for name in scenario_names() if name != "large"]


def _init(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["answers", "init", *argv])
    return code, out.getvalue(), err.getvalue()


def _settled(app: object) -> bool:
    return not any(worker.is_running for worker in app.workers)  # type: ignore[attr-defined]


async def _tui_defaults(home: Path, scenario: str) -> dict[str, object]:
    app = demo_app(home, scenario)
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        # the host check holds Next on a blocking finding (nouveau, Secure Boot…) until it is fixed or overridden:
        # the newcomer ticks "continue anyway", and the answers stay what they were
        await wait_for(pilot, lambda: app.screen.blocker().endswith("anyway'") or not app.screen.blocker(), 60)
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "mode")
        await wait_for(pilot, lambda: _settled(app), 30, "the Mode step's registry listing")  # it moves the ★
        check = app.screen.query_one("#mode-host-check", Button)
        if check.display:  # the hosts may run a driver already: the newcomer checks (as `answers init` does)
            check.press()
            await wait_for(pilot, lambda: bool(app.state.host_states) and not check.disabled, 60, "the host check")
        await pilot.press("ctrl+n")  # to Driver; pre-installed skips it
        await wait_for(pilot, lambda: on_step(app, "driver") or on_step(app, "paths"), 20, "the next step")
        if on_step(app, "driver"):
            await wait_for(pilot, lambda: _settled(app), 60, "the Driver step's searches")
            use = app.screen.query_one("#use-found", Button)
            if not app.state.get("driver.repository") and use.display:
                use.press()  # the one way on: Next waits for a target
                await wait_for(pilot, lambda: bool(app.state.get("driver.repository")), 10, "the registry taken")
            await next_to(pilot, "paths")
        await wait_for(pilot, lambda: _settled(app), 60, "the Paths step")
        plan = app.state.plan()
        assert plan is not None, app.state.validate()[1]
        return plan.answers_dict()


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_answers_init_writes_what_the_tui_defaults_to(tui_env: Path, scenario: str) -> None:
    code, out, err = await asyncio.to_thread(_init, "--demo", scenario)
    assert code == 0, err
    written = YAML(typ="safe").load(out)
    from_file = Plan.model_validate(written).answers_dict()  # the file validates through the plan model
    assert from_file == await _tui_defaults(tui_env, scenario)
    if not (written.get("operator") or {}).get("version") or "live ClusterPolicy" in out:
        return
    comments = [line for line in out.splitlines() if line.lstrip().startswith("#")]
    assert any(line.lstrip().startswith("# recommended:") for line in comments), out  # a reason per choice
    assert "# toolkit.runtime: left to the nodes" in out
    assert ("# driver.imagePullSecrets:" in out) is (written["mode"] != "preinstalled")


def test_mode_and_example_keep_their_meaning() -> None:
    code, out, _ = _init("--mode", "upstream")
    assert code == 0 and "mode: upstream" in out and "registry.example.com/nvidia" in out  # the example, offline
    code, out, _ = _init()
    assert code == 0 and "mode: precompiled" in out
    code, out, _ = _init("--example", "preinstalled")
    assert code == 0 and "mode: preinstalled" in out
    code, out, _ = _init("--demo", "sle-micro-precompiled", "--mode", "upstream")  # that mode's defaults there
    assert code == 0 and "mode: upstream" in out and "chosen with --mode (recommended: precompiled" in out
    assert "# driver.version: none: no version in nvcr.io/nvidia/driver is tagged for every node OS" in out  # why
    code, _, err = _init("--demo", "sle-micro-precompiled", "--example", "preinstalled")
    assert code == 2 and "--example" in err
