"""Reading the CI reports gpu-wizard writes (``--report-ctrf``, ``--report-junit``) the way CI systems read them:
the CTRF file validated against CTRF's own JSON schema (pinned in tests/schemas, its source noted there), the JUnit
file read by junitparser (a JUnit library from PyPI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from junitparser import JUnitXml, Properties, TestCase

SCHEMA = json.loads((Path(__file__).parent.parent / "schemas" / "ctrf.schema.json").read_text(encoding="utf-8"))


def ctrf(path: Path) -> dict[str, Any]:
    """The CTRF report at ``path``, validated against the schema."""
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)
    return doc


def junit_cases(path: Path) -> dict[str, tuple[TestCase, dict[str, str]]]:
    """Every test case by name, with its properties (node, verdict, hint)."""
    xml = JUnitXml.fromfile(str(path))
    cases: dict[str, tuple[TestCase, dict[str, str]]] = {}
    for suite in xml:
        for case in suite:
            props = case.child(Properties)
            cases[case.name] = (case, {p.name: p.value for p in props} if props is not None else {})
    return cases
