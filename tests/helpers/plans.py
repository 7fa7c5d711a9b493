"""A plan from an answers file with some driver fields changed, as the answers parser reads it."""

from __future__ import annotations

import json
from typing import Any

from ruamel.yaml import YAML

from wizard.engine.answers import AnswersError, parse_answers
from wizard.engine.plan import Plan


def answers_dict(text: str) -> dict[str, Any]:
    return json.loads(json.dumps(YAML(typ="safe", pure=True).load(text)))


def plan_or_refusal(base: str, **driver: Any) -> Plan | AnswersError:
    """The plan of ``base`` with ``driver`` fields changed, or the parser's refusal of them."""
    doc = answers_dict(base)
    doc["driver"].update(driver)
    try:
        return parse_answers(json.dumps(doc))[0]
    except AnswersError as exc:
        return exc


def answers_plan(base: str, **driver: Any) -> Plan | None:
    """The plan, or None where the answers are refused."""
    result = plan_or_refusal(base, **driver)
    return None if isinstance(result, AnswersError) else result
