"""``driver.upgradePolicy`` in the plan: validated once (answers, flags, TUI), rendered like the chart, applied, repeated.

The chart parity cases ``upgrade-policy*`` (tests/test_chart_parity.py) prove that the operator's
chart, given gpu-wizard's Helm values, writes the ClusterPolicy gpu-wizard writes; here: every bad
value is one line naming the field, the plan's values reach the ClusterPolicy, the NVIDIADriver and
the Helm values, the ``apply``/``upgrade`` flags change one field and keep the others, a second
apply from the state the first left changes nothing, and the estimate and stall window follow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.helpers.cli import run_cli as _cli
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.render_cases import CP, facts, node
from wizard.engine.answers import AnswersError, parse_answers, plan_errors
from wizard.engine.plan import Plan
from wizard.engine.render import render
from wizard.engine.upgrade import UpgradePolicy, with_upgrade_policy

DRIVER = {"version": "580.126.20", "repository": "nvcr.io/nvidia"}
POLICY = {"maxParallelUpgrades": 3, "maxUnavailable": "50%", "drain": {"enable": True, "timeoutSeconds": 600}}


def _plan(policy: Any, **driver: Any) -> Plan:
    return Plan.model_validate({"mode": "upstream", "driver": {**DRIVER, **driver, "upgradePolicy": policy}})


@pytest.mark.parametrize(
    ("policy", "field", "words"),
    [
        ({"maxParallelUpgrades": -1}, "maxParallelUpgrades", "0 or more (0: all at once)"),
        ({"maxParallelUpgrades": True}, "maxParallelUpgrades", "is not a whole number"),
        ({"maxUnavailable": "0%"}, "maxUnavailable", "a percentage from 1% to 100%"),
        ({"maxUnavailable": 0}, "maxUnavailable", "a node count of 1 or more"),
        ({"maxUnavailable": "101%"}, "maxUnavailable", "(e.g. 25%)"),
        ({"drain": {"timeoutSeconds": -5}}, "drain.timeoutSeconds", "0 or more"),
        ({"podDeletion": {"timeoutSeconds": 1.5}}, "podDeletion.timeoutSeconds", "whole number of seconds"),
        ({"waitForCompletion": {"podSelector": "a=b\x1b[31m"}}, "waitForCompletion.podSelector", "label selector"),
        ({"drain": {"enabled": True}}, "drain.enabled", "valid keys here: enable, force, timeoutSeconds"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_field(policy: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        _plan(policy)
    (error,) = plan_errors(caught.value)
    assert error.field == f"driver.upgradePolicy.{field}"
    assert words in error.message and "\n" not in error.message and "\x1b" not in error.message


def test_the_answers_file_names_the_line() -> None:
    text = "version: 1\nmode: upstream\ndriver:\n  version: 580.126.20\n  repository: nvcr.io/nvidia\n  upgradePolicy:\n    maxUnavailable: 0%\n"
    with pytest.raises(AnswersError) as caught:
        parse_answers(text, "answers.yaml")
    (line,) = [e.render("answers.yaml") for e in caught.value.errors]
    assert line.startswith("answers.yaml:7: driver.upgradePolicy.maxUnavailable:"), line
    plan, _ = parse_answers(text.replace("0%", "'2'"), "answers.yaml")
    assert plan.driver.upgradePolicy is not None and plan.driver.upgradePolicy.maxUnavailable == 2
    assert Plan.model_validate(plan.answers_dict()) == plan  # the answers round-trip


def test_the_plans_policy_reaches_every_rendered_object() -> None:
    nodes = facts(CP, node("gpu-0"))
    rendered = render(_plan(POLICY), nodes)
    written = rendered.cluster_policy["spec"]["driver"]["upgradePolicy"]
    assert written["maxParallelUpgrades"] == 3 and written["maxUnavailable"] == "50%"
    assert written["drain"] == {"enable": True, "force": False, "timeoutSeconds": 600, "deleteEmptyDir": False}
    assert written["podDeletion"] == {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": False}
    values = rendered.helm_values["driver"]["upgradePolicy"]
    assert values["gpuPodDeletion"]["timeoutSeconds"] == 300 and "podDeletion" not in values  # the chart's name
    drivers = render(_plan(POLICY, useNvidiaDriverCRD=True), nodes).nvidia_drivers
    assert drivers[0]["spec"]["upgradePolicy"] == written
    # without a policy in the plan, the chart's default is rendered and nothing is owned
    plain = render(Plan.model_validate({"mode": "upstream", "driver": DRIVER}), nodes)
    assert plain.cluster_policy["spec"]["driver"]["upgradePolicy"]["maxParallelUpgrades"] == 1
    assert "upgradePolicy" not in plain.helm_values["driver"]


def test_one_changed_field_keeps_the_others() -> None:
    plan = Plan.model_validate({"mode": "upstream", "driver": DRIVER})
    live = {"maxParallelUpgrades": 4, "drain": {"enable": True, "timeoutSeconds": 900}, "maxUnavailable": "10%"}
    changed = with_upgrade_policy(plan, {"maxUnavailable": "2"}, live)
    policy = changed.driver.upgradePolicy
    assert policy is not None and (policy.maxParallelUpgrades, policy.maxUnavailable) == (4, 2)
    assert policy.drain.enable and policy.drain.timeoutSeconds == 900
    assert with_upgrade_policy(plan, {}, live) is plan  # no flag: the live policy is left alone


def test_the_estimate_and_the_stall_window_follow_the_policy() -> None:
    assert UpgradePolicy().stall_seconds() is None  # waitForCompletion 0 waits for ever: only the overall limit
    policy = UpgradePolicy.from_spec(
        {"drain": {"enable": True, "timeoutSeconds": 900}, "waitForCompletion": {"timeoutSeconds": 60}}
    )
    assert policy.stall_seconds() == 900 + 360
    assert UpgradePolicy.from_spec({"maxParallelUpgrades": 3, "maxUnavailable": 2}).parallel(10) == 2


def test_flags_change_the_policy_and_a_second_apply_changes_nothing(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("existing-install-plain")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\noperator: {version: v26.3.3}\nmode: upstream\ndriver: {version: 570.195.03, repository: nvcr.io/nvidia}\n"
    )
    common = ["--kubeconfig", str(demo.kubeconfig_path), "--no-registry", "--backup-dir", str(tmp_path / "b")]

    code, _, err = _cli(capsys, "apply", "--answers", str(answers), *common, "--dry-run", "--max-unavailable", "0%")
    assert code == 2 and err.strip().splitlines()[-1] == (
        "gpu-wizard: error: --max-unavailable: upgradePolicy.maxUnavailable: '0%' is not a node count of 1 or "
        "more (e.g. 2) or a percentage from 1% to 100% (e.g. 25%)"
    )
    code, out, err = _cli(
        capsys, "upgrade", "--driver", "580.126.20", *common, "--dry-run", "--max-parallel-upgrades", "3", "--drain"
    )
    assert code == 0, err
    assert "upgradePolicy (this plan's): autoUpgrade true · maxParallelUpgrades 3" in out and "drain on (300s)" in out

    flags = ["--max-parallel-upgrades", "2", "--drain-timeout", "120", "--drain"]
    code, out, err = _cli(capsys, "apply", "--answers", str(answers), *common, "--yes", "--no-wait", *flags)
    assert code == 0, err
    assert "+      maxParallelUpgrades: 2" in out
    live = demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None
    policy = live["spec"]["driver"]["upgradePolicy"]
    assert policy["maxParallelUpgrades"] == 2 and policy["drain"]["enable"] and policy["drain"]["timeoutSeconds"] == 120
    assert policy["podDeletion"]["timeoutSeconds"] == 300  # the fields no flag named are still there
    # the same again, and then without the flags: the policy stays as the first apply left it
    for again in (flags, []):
        code, out, err = _cli(capsys, "apply", "--answers", str(answers), *common, "--yes", "--no-wait", *again)
        assert (code, out) == (0, "no changes: the cluster already holds this plan\n"), err
