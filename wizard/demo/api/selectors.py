"""Label and field selectors, parsed with the grammar of ``k8s.io/apimachinery`` and matched against dicts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from wizard.demo.api.status import ApiError, bad_request

Matcher = Callable[[dict[str, Any]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_SET_RE = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(([^)]*)\)$")
_EQ_RE = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*([-A-Za-z0-9_.]*)$")
_EXISTS_RE = re.compile(rf"^(!?)\s*({_KEY})$")


def _split_terms(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    terms.append("".join(current).strip())
    return [t for t in terms if t]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    if match := _SET_RE.match(term):
        key, op, raw = match.group(1), match.group(3), match.group(4)
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQ_RE.match(term):
        key, op, value = match.group(1), match.group(3), match.group(4)
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_RE.match(term):
        negate, key = match.group(1) == "!", match.group(2)
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(f"unable to parse requirement: {term!r}: invalid label selector")


def label_matcher(selector: str | None) -> Matcher | None:
    """A predicate for objects whose labels match, or None when the selector is empty."""
    if not selector or not selector.strip():
        return None
    tests = [_label_term(t) for t in _split_terms(selector)]

    def match(obj: dict[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return match


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form of a dotted field (missing: empty string), as field selectors compare it."""
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_matcher(selector: str | None) -> Matcher | None:
    """A predicate for objects whose fields match, or None when the selector is empty."""
    if not selector or not selector.strip():
        return None
    tests: list[tuple[str, bool, str]] = []
    for term in _split_terms(selector):
        match = re.match(r"^([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)$", term)
        if not match:
            raise ApiError(400, f"invalid selector: '{selector}'; can't understand '{term}'")
        tests.append((match.group(1), match.group(2) == "!=", match.group(3)))

    def match_all(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) != negate for path, negate, value in tests)

    return match_all


def combined(label: str | None, field: str | None) -> Matcher | None:
    """Both selectors at once (None when neither restricts anything)."""
    matchers = [m for m in (label_matcher(label), field_matcher(field)) if m is not None]
    if not matchers:
        return None
    if len(matchers) == 1:
        return matchers[0]
    return lambda obj: all(m(obj) for m in matchers)
