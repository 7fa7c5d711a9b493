"""Known failure signatures: which known GPU Operator failure a failing node's evidence shows.

The catalog (``assets/failures/signatures.yaml``) names, per known failure, the operator issue it
comes from, regexes on log lines / events / container messages / the upgrade-state label, the cause
in one sentence and the fix. :func:`match` is pure: the cluster room gathers the evidence
(:mod:`wizard.cluster.diagnosis.diagnose`), this module only reads it.

Log lines are untrusted: every line is cut to :data:`MAX_LINE` characters before any regex sees
it (a 1 MB line costs no more than a short one), the catalog's patterns are refused at load time
when they nest quantifiers (the shape of catastrophic backtracking), and every line handed back
goes through :func:`wizard.engine.textsafe.printable`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from wizard.bundled import asset_text, parse_yaml
from wizard.engine.textsafe import printable

MAX_LINE = 2000
"""Characters of one evidence line that are matched and shown (the rest is cut: a log line can be 1 MB)."""
SHOWN_LINES = 3
"""Matching lines kept per signature (the first ones: the later ones of a crash loop repeat them)."""
LAST_LINES = 10
"""Lines shown for a failure no signature explains."""
SOURCES = frozenset({"log", "event", "status", "label"})
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[+*}](?:[^()\\]|\\.)*\)[+*{]")
"""A group that holds a quantifier and is itself repeated: ``(a+)+`` and kin, refused in the catalog."""


class SignatureError(ValueError):
    """The catalog is malformed (one line naming the entry and the field)."""


@dataclass(frozen=True)
class Signature:
    """One known failure."""

    id: str
    title: str
    issue: str
    """The operator issue it comes from (``NVIDIA/gpu-operator#1726``)."""
    patterns: tuple[re.Pattern[str], ...]
    sources: frozenset[str]
    cause: str
    fix: str
    also: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    """Ids of more specific signatures: when one of them matched, this generic one is not shown."""
    absent: tuple[re.Pattern[str], ...] = ()
    """Patterns that must match no line of the evidence (a line that shows the signature does not apply)."""

    def filled(self, text: str, context: dict[str, str]) -> str:
        """``text`` with ``{node}`` / ``{kernel}`` replaced by the values of ``context``, printable and
        shell-quoted (they land in commands the user copies)."""
        for key in ("node", "kernel"):
            value = context.get(key)
            text = text.replace("{" + key + "}", shlex.quote(printable(value)) if value else f"the node's {key}")
        return text


@dataclass(frozen=True)
class Evidence:
    """One line of what was gathered for a node: its kind, where it came from and the text."""

    source: str
    """``log``, ``event``, ``status`` (a container's waiting/terminated message) or ``label``."""
    origin: str
    """``nvidia-driver-ctr (previous)``, ``event BackOff``, ``nvidia.com/gpu-driver-upgrade-state``…"""
    text: str

    def shown(self) -> str:
        """``origin | text``, printable and cut to :data:`MAX_LINE` characters."""
        return printable(f"{self.origin} | {_cut(self.text)}")


@dataclass(frozen=True)
class Finding:
    """A signature that matched, with the lines that matched it."""

    signature: Signature
    lines: tuple[Evidence, ...]
    context: dict[str, str] = field(default_factory=dict)

    @property
    def cause(self) -> str:
        return self.signature.filled(self.signature.cause, self.context)

    @property
    def fix(self) -> str:
        return self.signature.filled(self.signature.fix, self.context)

    def as_dict(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "title": sig.title,
            "issue": sig.issue,
            "also": list(sig.also),
            "cause": self.cause,
            "fix": self.fix,
            "lines": [e.shown() for e in self.lines],
        }


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[:MAX_LINE] + "…"


def _text(entry: dict[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SignatureError(f"{where}.{key}: must be a non-empty string")
    return " ".join(value.split())


def _pattern(text: Any, where: str) -> re.Pattern[str]:
    if not isinstance(text, str) or not text:
        raise SignatureError(f"{where}: must be a non-empty regex string")
    if _NESTED_QUANTIFIER.search(text):
        raise SignatureError(f"{where}: nested quantifiers can backtrack catastrophically on a hostile line: {text}")
    try:
        return re.compile(text)
    except re.error as exc:
        raise SignatureError(f"{where}: not a valid regex ({exc})") from None


def parse_signatures(text: str, source: str = "signatures.yaml") -> tuple[Signature, ...]:
    """The catalog's signatures, checked: every field present, sources known, ids unique, patterns linear."""
    data = parse_yaml(text)
    entries = data.get("signatures") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise SignatureError(f"{source}: signatures: must be a non-empty list")
    found: list[Signature] = []
    for index, entry in enumerate(entries):
        where = f"{source}: signatures[{index}]"
        if not isinstance(entry, dict):
            raise SignatureError(f"{where}: must be a mapping")
        sid = _text(entry, "id", where)
        sources = entry.get("sources")
        if not isinstance(sources, list) or not sources or not set(sources) <= SOURCES:
            raise SignatureError(f"{where}.sources: a non-empty list of {', '.join(sorted(SOURCES))}")
        patterns = entry.get("patterns")
        if not isinstance(patterns, list) or not patterns:
            raise SignatureError(f"{where}.patterns: must be a non-empty list")
        if any(s.id == sid for s in found):
            raise SignatureError(f"{where}.id: {sid!r} is used twice")
        found.append(
            Signature(
                id=sid,
                title=_text(entry, "title", where),
                issue=_text(entry, "issue", where),
                patterns=tuple(_pattern(p, f"{where}.patterns[{i}]") for i, p in enumerate(patterns)),
                sources=frozenset(str(s) for s in sources),
                cause=_text(entry, "cause", where),
                fix=_text(entry, "fix", where),
                also=tuple(str(a) for a in entry.get("also") or ()),
                unless=tuple(str(a) for a in entry.get("unless") or ()),
                absent=tuple(_pattern(p, f"{where}.absent[{i}]") for i, p in enumerate(entry.get("absent") or ())),
            )
        )
    return tuple(found)


@cache
def signatures() -> tuple[Signature, ...]:
    """The bundled catalog (``assets/failures/signatures.yaml``), parsed once."""
    return parse_signatures(asset_text("failures", "signatures.yaml"), "assets/failures/signatures.yaml")


def match(
    evidence: Iterable[Evidence],
    context: dict[str, str] | None = None,
    catalog: tuple[Signature, ...] | None = None,
) -> list[Finding]:
    """The signatures ``evidence`` shows, in catalog order, each with its first matching lines."""
    catalog = signatures() if catalog is None else catalog
    hits: dict[str, list[Evidence]] = {}
    excluded: set[str] = set()
    for item in evidence:
        line = _cut(item.text)
        for sig in catalog:
            if sig.absent and any(p.search(line) for p in sig.absent):
                excluded.add(sig.id)
            if item.source not in sig.sources:
                continue
            kept = hits.setdefault(sig.id, [])
            if len(kept) >= SHOWN_LINES or any(k.text == item.text for k in kept):
                continue  # a crash loop's previous run repeats the current one
            if any(p.search(line) for p in sig.patterns):
                kept.append(item)
    matched = {sig.id for sig in catalog if hits.get(sig.id) and sig.id not in excluded}
    return [
        Finding(sig, tuple(hits[sig.id]), dict(context or {}))
        for sig in catalog
        if sig.id in matched and not matched.intersection(sig.unless)
    ]


def last_lines(evidence: Iterable[Evidence], count: int = LAST_LINES) -> list[Evidence]:
    """The last ``count`` non-blank log lines (what an unexplained failure still shows)."""
    lines = [e for e in evidence if e.source == "log" and e.text.strip()]
    return lines[-count:]
