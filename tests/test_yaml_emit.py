"""The manifests' YAML written without ruamel's serializer (wizard/engine/yaml_emit.py) is ruamel's text exactly.

``to_yaml`` takes the plain writer where it can and ruamel elsewhere; both must give the same bytes, on
everything gpu-wizard renders (every bundled scenario's defaults, the examples, Helm values) and on values
picked to be awkward (YAML 1.1 words, numbers, indicators, colons, spaces, quotes, long text).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from wizard.cli.common import load_nodelist
from wizard.engine import render as rendering
from wizard.engine.answers import load_answers, plan_for_nodes
from wizard.engine.render_policy import plain_yaml_is_string
from wizard.engine.yaml_emit import dump_plain

EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"
AWKWARD = [
    "",
    " a",
    "a ",
    "a  b",
    "a b c",
    "a: b",
    "a:b",
    "a:",
    ":a",
    "nvcr.io:5000/nvidia/driver:580.126.20-ubuntu22.04",
    "http://example.com:8080/x",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "~",
    "null",
    "true",
    "False",
    "1",
    "-1",
    "+1",
    "0755",
    "1:20",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1.5",
    ".5",
    ".inf",
    ".NaN",
    "1_000",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "580",
    "580.126.20",
    "-a",
    "- a",
    "-",
    "a #b",
    "a#b",
    "#a",
    "@a",
    "%a",
    "`a",
    "'q'",
    "it's",
    '"d"',
    "é",
    "a\nb",
    "a\tb",
    "25%",
    "=",
    "<<",
    "a,b",
    "[a]",
    "{a}",
    "*a",
    "&a",
    "!a",
    "|",
    ">",
    "?",
    "? a",
    "/",
    "/run/nvidia/driver",
    "x" * 1500,
    "k" * 200,
    "a.b/c_d-e@f%g+h=i~j",
]


def ruamel_text(docs: list[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    rendering._yaml().dump_all(docs, buffer)
    return buffer.getvalue()


def assert_same(docs: list[dict[str, Any]]) -> None:
    assert rendering.to_yaml(docs) == ruamel_text(docs)


@pytest.mark.parametrize(
    "example", sorted(p.name.removesuffix(".answers.yaml") for p in EXAMPLES.glob("*.answers.yaml"))
)
def test_every_example_render_is_ruamels_text_through_the_plain_writer(example: str) -> None:
    answers = str(EXAMPLES / f"{example}.answers.yaml")
    plan, _ = load_answers(answers, nodes_later=True)
    facts = load_nodelist(str(EXAMPLES / f"{example}.nodes.json"))
    result = rendering.render(plan_for_nodes(plan, facts, answers), facts)
    docs = result.documents()
    assert dump_plain(docs, plain_yaml_is_string) is not None  # the fast path is the one taken
    assert_same(docs)
    assert_same([result.helm_values])


@pytest.mark.parametrize("text", AWKWARD, ids=range(len(AWKWARD)))
def test_an_awkward_string_is_written_as_ruamel_writes_it(text: str) -> None:
    assert_same([{"value": text, "list": [text, {"inner": text}], "nested": {"deeper": [text]}}])
    if text:
        assert_same([{text: 1}, {"m": {text: [text]}}])


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -3, 10**20, 1.5, 1e-9, [], {}, [[]], [{}], [[1, 2]], [None], [1.5], [[1], "a"]],
    ids=repr,
)
def test_every_kind_of_value_is_written_as_ruamel_writes_it(value: Any) -> None:
    assert_same([{"value": value, "list": [value], "nested": {"value": value}}])
    assert_same([{"a": 1}, {"value": value}])
