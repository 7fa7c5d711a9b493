"""Advice rules are data (issue 38, item 5): a table of rules in the order shown, the plain wording in
``assets/advice/advice.yaml``, as the doctor's findings are in ``assets/doctor/``."""

from __future__ import annotations

from typing import Any

from tests.helpers.hostile.cases_nodes import node
from wizard.bundled import asset_text, parse_yaml
from wizard.engine.advice import RULES, advise, worded
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.plan import Plan
from wizard.engine.render import render

# The stable codes (the TUI, the CLI and the tests key on them), rule by rule in the order the advice is shown:
# a rule dropped, or moved, fails here.
DECLARED = [
    ("mixed-os",),
    ("upstream-not-validated",),
    ("airgapped-no-repoconfig",),
    ("driver-branch-unsupported", "driver-downgrade"),
    ("repoconfig-operator-os", "repoconfig-unsupported-os"),
    ("tuple-unpublished",),
    ("image-whitelist",),
    ("driverinstalldir-not-needed",),
    ("geforce-licence", "consumer-excluded"),
    ("driver-outside-operand-registry", "operands-from-public-registry"),
    ("node-unplaced",),
    ("predicted-from-nodeinfo",),
    ("os-without-driver-image",),
    ("precompiled-amd64-only", "gpu-node-architecture"),
    ("nfd-disagrees",),
    ("no-gpu-nodes",),
]


def test_every_rule_is_in_the_table_in_its_order() -> None:
    assert [rule.codes for rule in RULES] == DECLARED


def test_every_worded_advice_belongs_to_a_rule_and_reads_whole() -> None:
    codes = {code for rule in RULES for code in rule.codes}
    worded_codes = parse_yaml(asset_text("advice", "advice.yaml"))["advice"]
    assert set(worded_codes) <= codes
    for code in worded_codes:
        advice = worded(code, message="m", hint="h", targets="t")
        assert advice.code == code and advice.level in ("warning", "note")
        assert advice.message and advice.reason and "{" not in advice.message + advice.reason


def _codes(mode: str, *nodes: dict[str, Any], **driver: Any) -> list[str]:
    plan = Plan.model_validate(
        {"operator": {"version": "v26.3.3"}, "mode": mode, "driver": {"repository": "registry.example.com/m"} | driver}
    )
    facts = facts_from_nodelist({"kind": "NodeList", "items": list(nodes)})
    rendered = render(plan, facts)
    advice = advise(plan, facts, rendered.node_images, rendered.mirror)
    for entry in advice:  # each advice comes from a rule that declares its code
        assert any(entry.code in rule.codes for rule in RULES), entry.code
    return [entry.code for entry in advice]


def test_the_worded_rules_fire_where_they_apply() -> None:
    """Each rule whose words moved to the asset still gives its advice, in the table's order."""
    upstream = _codes("upstream", node("gpu-0"), version="580.126.20", source="nvcr.io/nvidia", airgapped=True)
    assert upstream[:2] == ["upstream-not-validated", "airgapped-no-repoconfig"]
    assert "image-whitelist" in upstream
    assert _codes("upstream", version="580.126.20") == ["upstream-not-validated", "no-gpu-nodes"]
    old_branch = _codes("precompiled", node("gpu-0"), version="470")
    assert "driver-branch-unsupported" in old_branch
    assert worded("image-whitelist", targets="a, b").message.endswith("add the imported tags: a, b.")
