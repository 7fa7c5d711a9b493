"""The manifests' YAML, written without ruamel's serializer where the data is plain: the same text, ~10x faster.

ruamel's round-trip dump (representer, serializer, emitter, all pure Python) was about two thirds of
``gpu-wizard render``'s own work after its imports. The documents gpu-wizard writes are plain data: nested
mappings with string keys, lists, strings, integers and booleans. :func:`dump_plain` writes those in the
layout :func:`wizard.engine.render.to_yaml` asks ruamel for (mappings indented 2, list dashes 2 inside their
key, block style, ``---`` between documents), and gives up (None) on anything it does not write exactly as
ruamel would: a float, a null in a list, a list in a list, a long key or string, a string that needs more
than plain or single quotes, a mapping or list met twice in one document (ruamel writes an anchor and aliases). The caller then lets ruamel write the whole text, so the output never depends on
which path wrote it (tests/test_yaml_emit.py compares both on every bundled scenario and on awkward values).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: A string ruamel writes plain in block context when its resolvers read it back as a string: ASCII words
#: (letters, digits and ``_./@%+=~-``), joined by single spaces or by colons not followed by a space, not
#: starting with an indicator. Anything else goes to ruamel.
_PLAIN = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./@%+=~-]*(?:[ :][A-Za-z0-9_./@%+=~-]+)*\Z", re.ASCII)
_LONGEST = 1000
"""Longer strings go to ruamel (its line width is 4096; a key over 128 characters becomes a ``?`` key)."""
_LONGEST_KEY = 128


class _NotPlain(Exception):
    """A value :func:`dump_plain` does not write exactly as ruamel would."""


class _Writer:
    """One document's writing: the resolver check and the containers met so far (by identity)."""

    def __init__(self, is_string: Callable[[str], bool]) -> None:
        self.is_string = is_string
        self.seen: set[int] = set()

    def once(self, node: object) -> None:
        """A mapping or list met a second time is an anchor and aliases in ruamel's text."""
        if id(node) in self.seen:
            raise _NotPlain
        self.seen.add(id(node))


def dump_plain(docs: Iterable[Mapping[str, Any]], is_string: Callable[[str], bool]) -> str | None:
    """``docs`` as multi-document YAML, or None where only ruamel writes it right.

    ``is_string(text)``: whether ``text`` written plain reads back as a string in YAML 1.1 and 1.2 (else it
    is single-quoted, as ``to_yaml``'s representer does).
    """
    lines: list[str] = []
    try:
        for number, doc in enumerate(docs):
            if number:
                lines.append("---")
            if not isinstance(doc, dict) or not doc:
                raise _NotPlain
            _mapping(doc, "", lines, _Writer(is_string))
    except _NotPlain:
        return None
    return "\n".join(lines) + "\n" if lines else ""


def _scalar(value: Any, writer: _Writer) -> str:
    if isinstance(value, str):
        if len(value) > _LONGEST or not _PLAIN.match(value):
            raise _NotPlain
        return value if writer.is_string(value) else f"'{value}'"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    raise _NotPlain  # floats, None in a list, anything else: ruamel's own representation


def _mapping(node: dict[Any, Any], indent: str, lines: list[str], writer: _Writer) -> None:
    writer.once(node)
    inner = indent + "  "
    for key, value in node.items():
        if not isinstance(key, str) or len(key) > _LONGEST_KEY:
            raise _NotPlain
        head = f"{indent}{_scalar(key, writer)}:"
        if isinstance(value, dict):
            if value:
                lines.append(head)
                _mapping(value, inner, lines, writer)
            else:
                writer.once(value)
                lines.append(head + " {}")
        elif isinstance(value, list):
            if value:
                lines.append(head)
                _sequence(value, inner, lines, writer)
            else:
                writer.once(value)
                lines.append(head + " []")
        elif value is None:
            lines.append(head)
        else:
            lines.append(f"{head} {_scalar(value, writer)}")


def _sequence(items: list[Any], indent: str, lines: list[str], writer: _Writer) -> None:
    writer.once(items)
    for item in items:
        if isinstance(item, dict):
            if not item:
                writer.once(item)
                lines.append(f"{indent}- {{}}")
                continue
            first = len(lines)
            _mapping(item, indent + "  ", lines, writer)
            lines[first] = f"{indent}- {lines[first][len(indent) + 2 :]}"
        elif isinstance(item, list):
            if item:
                raise _NotPlain  # ruamel writes "-   - x"
            writer.once(item)
            lines.append(f"{indent}- []")
        else:
            lines.append(f"{indent}- {_scalar(item, writer)}")
