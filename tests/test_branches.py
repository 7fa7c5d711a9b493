"""Driver branch support for every mode and downgrades named (issue 25, item 6): the engine's rule, the advice
shown with the plan, ``doctor --answers`` and the Driver step all say it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.snapshots.plugin import screen_text, wait_for
from tests.test_tui_flows import demo_app, set_field, walk_to
from wizard.cli.main import main
from wizard.engine.branches import branch_checks, is_downgrade
from wizard.engine.facts import ClusterFacts
from wizard.engine.plan import Plan
from wizard.engine.render import render


def plan(version: str, mode: str = "upstream", release: str = "v26.7.0") -> Plan:
    driver = {"version": version, "repository": "nvcr.io/nvidia", "image": "driver"}
    return Plan.model_validate({"version": 1, "mode": mode, "operator": {"version": release}, "driver": driver})


@pytest.mark.parametrize("mode", ["upstream", "precompiled"])
def test_an_unsupported_branch_is_warned_about_in_every_containerized_mode(mode: str) -> None:
    checks = branch_checks(plan("570.195.03" if mode == "upstream" else "570", mode))
    assert [c.check for c in checks] == ["driver-branch-unsupported"]
    assert "610, 595, 580, 535" in checks[0].message and "580.173.02" in checks[0].hint + (
        "580" if mode == "precompiled" else ""
    )
    assert branch_checks(plan("580.126.20", mode)) == []
    assert branch_checks(plan("580.126.20", mode, "v26.3.3")) == []
    assert [c.check for c in branch_checks(plan("570.195.03", mode, "v26.3.3"))] == ["driver-branch-unsupported"]


def test_the_suggested_version_is_one_the_nodes_os_has() -> None:
    sle = Plan.model_validate(
        {"version": 1, "mode": "precompiled", "driver": {"version": "570.172.08.1", "repository": "r.example.com/m"}}
    )
    (check,) = branch_checks(sle, tag_oses=["sle-micro5.5"])
    assert "580.126.09.1" in check.hint  # the catalog's supported version for SLE Micro, not Ubuntu's list


@pytest.mark.parametrize(
    ("live", "planned", "down"),
    [
        ("580.126.20", "570.195.03", True),
        ("580", "570", True),
        ("580.126.20", "580.105.08", True),
        ("580.126.20", "580", False),
        ("570.195.03", "580.126.20", False),
        ("", "570", False),
    ],
)
def test_downgrades_are_named(live: str, planned: str, down: bool) -> None:
    assert is_downgrade(live, planned) is down
    found = [c.check for c in branch_checks(plan(planned if "." in planned else planned + ".1.1"), live_version=live)]
    assert ("driver-downgrade" in found) is is_downgrade(live, planned if "." in planned else planned + ".1.1")


def test_the_plan_s_advice_carries_the_branch_warning() -> None:
    rendered = render(plan("570.195.03"), ClusterFacts([]))
    assert "driver-branch-unsupported" in [a.code for a in rendered.advice]


def test_doctor_answers_finds_an_unsupported_branch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: upstream\ndriver:\n  version: 570.195.03\n  repository: nvcr.io/nvidia\n  image: driver\n",
        encoding="utf-8",
    )
    code = main(["doctor", "--demo", "ubuntu-upstream", "--answers", str(answers), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    found = {f["check"]: f for f in doc["findings"] if f["status"] in ("fail", "warn")}
    assert "driver-branch-unsupported" in found, doc["findings"]
    assert "580.173.02" in found["driver-branch-unsupported"]["fix"]


async def test_the_driver_step_names_a_downgrade_and_an_unsupported_branch(tui_env: Path) -> None:
    app = demo_app(tui_env, "kernel-drift")  # precompiled 580 live on v26.7.0
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        assert "downgrade" not in screen_text(app)
        await set_field(pilot, "driver-version", "570")
        await wait_for(pilot, lambda: "downgrade" in screen_text(app), 10, "the notes")
        text = " ".join(screen_text(app).split())
        assert "! branch 570 unsupported by operator v26.7.0 (610, 595," in text
        assert "! 580 → 570 is a downgrade of the" in text
