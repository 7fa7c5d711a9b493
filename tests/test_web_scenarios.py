"""The trainer decides which demo scenarios students may pick (``gpu-wizard serve --scenarios``).

By default every bundled scenario but ``large`` (~530 MiB and ~85 CPU-s a session, far past the 300 MB
a session the cap assumes). The server hands the list to each session's process
(``GPU_WIZARD_DEMO_SCENARIOS``); the wizard's Connect step offers only those, and starting another
one is refused with one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from textual.widgets import Select

from tests.helpers.tui import demo_app
from tests.snapshots.plugin import wait_for
from wizard.cli.common import UsageError
from wizard.cli.serve import _offered_scenarios
from wizard.cluster import facade
from wizard.demo.scenarios.scenario import OFFERED_VARIABLE, ScenarioError, check_offered, scenario_names


def test_by_default_every_bundled_scenario_but_large_is_offered() -> None:
    offered = _offered_scenarios(None)
    assert "large" in scenario_names() and "large" not in offered
    assert set(offered) == set(scenario_names()) - {"large"}
    assert _offered_scenarios("all") == tuple(scenario_names())
    assert _offered_scenarios("preinstalled, mig") == ("preinstalled", "mig")
    with pytest.raises(UsageError, match="--scenarios: 'nope'"):
        _offered_scenarios("preinstalled,nope")


def test_a_session_offers_and_starts_only_the_scenarios_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "large" in facade.demo_scenarios()  # outside a classroom: every one
    monkeypatch.setenv(OFFERED_VARIABLE, "sle-micro-precompiled,preinstalled,/srv/class/site.yaml")
    assert facade.demo_scenarios() == ["preinstalled", "sle-micro-precompiled", "/srv/class/site.yaml"]
    check_offered("preinstalled")
    with pytest.raises(ScenarioError, match="'large' is not offered in this classroom"):
        check_offered("large")


async def test_the_connect_step_lists_only_the_offered_scenarios(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OFFERED_VARIABLE, "sle-micro-precompiled,preinstalled")
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: bool(app.screen.query("#scenario")), 30, "the demo scenario list")
        select = app.screen.query_one("#scenario", Select)
        assert [value for _, value in select._options] == ["preinstalled", "sle-micro-precompiled"]


def test_serve_options_offer_every_scenario_but_large() -> None:
    from wizard.cli.serve import _options

    args = argparse.Namespace(
        port=0, max_sessions=2, spares=0, grace=300, max_per_client=3, public_url=None, host="127.0.0.1", scenarios=None
    )
    options = _options(args, "sle-micro-precompiled")
    assert "large" not in options.scenarios and "preinstalled" in options.scenarios
