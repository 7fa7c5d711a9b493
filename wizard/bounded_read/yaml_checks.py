"""YAML checked before any document is built, in linear time: lines, comments, flow collections per line,
then the parser's event stream (no anchors, aliases or tags; depth, node count, scalar and number sizes)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)

from wizard.bounded_read.limits import BoundsError, Limits

# Plain scalars that YAML 1.2 (ruamel's default) resolves to numbers: ints in any base, floats.
_NUMBER = re.compile(r"[-+]?(?:0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9_]*\.?[0-9_]+(?:[eE][-+]?[0-9]+)?)", re.ASCII)
_COMMENT = re.compile(r"(?:^|[ \t])#")


def check_yaml(text: str, limits: Limits) -> None:
    """BoundsError (with the line and, when known, the dotted key path) when YAML ``text`` breaks ``limits``."""
    _check_lines(text, limits)
    _check_events(text, limits)


def _check_lines(text: str, limits: Limits) -> None:
    """Lines, their length, the comments and the flow collections a line opens, before the parser runs.

    Counts characters after a ``#`` that starts a comment, and ``[``/``{`` anywhere on a line where
    lines may be longer than 1,024 characters (both over-estimates when they sit inside a quoted
    value, which only makes the bound stricter).
    """
    comment_chars = 0
    # ruamel's scanner looks up to 1,024 characters ahead at each [ or {: with shorter lines the
    # line length bounds that cost; with longer ones, the flow collections a line opens must
    long_lines = limits.max_line_chars > 1024
    lines = text.split("\n")
    if len(lines) > limits.max_lines + 1:  # +1: the empty tail after the final newline
        raise BoundsError(f"{len(lines) - 1} lines; {limits.kind} needs far fewer (at most {limits.max_lines})")
    for number, line in enumerate(lines, start=1):
        if len(line) > limits.max_line_chars:
            raise BoundsError(
                f"line {number} has {len(line)} characters; lines of at most {limits.max_line_chars} are accepted",
                number,
            )
        if long_lines and line.count("[") + line.count("{") > limits.max_depth:
            raise BoundsError(f"nested deeper than {limits.max_depth} levels (on one line)", number)
        found = _COMMENT.search(line)
        if found:
            comment_chars += len(line) - found.start()
            if comment_chars > limits.max_comment_chars:
                raise BoundsError(
                    f"the comments exceed {limits.max_comment_chars // 1024} KiB by this line; shorten or remove them",
                    number,
                )


@dataclass
class _Open:
    """A collection being parsed: where its current value sits in the key path."""

    mapping: bool
    key: str = ""
    index: int = 0
    expecting_key: bool = True


def _check_events(text: str, limits: Limits) -> None:
    """Stream the parser's events: no anchors, aliases or tags; bounded depth, node count and scalars."""
    path: list[_Open] = []
    nodes = 0
    try:
        for event in YAML(typ="safe", pure=True).parse(text):
            if not isinstance(event, (NodeEvent, CollectionEndEvent)):
                continue
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, CollectionEndEvent):
                path.pop()
                _value_done(path)
                continue
            where = _dotted(path)
            if isinstance(event, AliasEvent) or getattr(event, "anchor", None):
                raise BoundsError(
                    "anchors and aliases (&name, *name) are not accepted in this file; write each value out",
                    line,
                    where,
                )
            tag = getattr(event, "tag", None)
            if tag is not None:
                raise BoundsError(f"YAML tags ({tag}) are not accepted; write the plain value", line, where)
            nodes += 1
            if nodes > limits.max_nodes:
                raise BoundsError(f"more than {limits.max_nodes:,} values; {limits.kind} needs far fewer", line)
            if isinstance(event, ScalarEvent):
                _check_scalar(event, line, where, path, limits)
                continue
            assert isinstance(event, CollectionStartEvent)
            if len(path) >= limits.max_depth:
                raise BoundsError(f"nested deeper than {limits.max_depth} levels", line, where)
            path.append(_Open(mapping=isinstance(event, MappingStartEvent)))
    except YAMLError:
        return  # malformed YAML: the loader reports it with its line


def _check_scalar(event: ScalarEvent, line: int | None, where: str, path: list[_Open], limits: Limits) -> None:
    value = event.value
    frame = path[-1] if path else None
    if frame is not None and frame.mapping and frame.expecting_key:
        frame.key, frame.expecting_key = value[:64], False  # a key: the next node is its value
        if len(value) > limits.max_scalar_chars:
            raise BoundsError(f"a key of {len(value):,} characters; keys are short names", line, where)
        return
    if len(value) > limits.max_scalar_chars:
        raise BoundsError(
            f"a value of {len(value):,} characters; no value here is longer than {limits.max_scalar_chars:,}",
            line,
            where,
        )
    if event.style is None and len(value) > limits.max_number_chars and _NUMBER.fullmatch(value):
        raise BoundsError(
            f"a number of {len(value)} characters is not valid here; write the value the field takes, "
            "quoted if it is text",
            line,
            where,
        )
    _value_done(path)


def _value_done(path: list[_Open]) -> None:
    """A value has ended: a mapping now expects its next key, a sequence its next item."""
    if not path:
        return
    frame = path[-1]
    if frame.mapping:
        frame.expecting_key = True
    else:
        frame.index += 1


def _dotted(path: list[_Open]) -> str:
    parts: list[str] = []
    for frame in path:
        if frame.mapping and frame.expecting_key:
            break
        parts.append(frame.key if frame.mapping else str(frame.index))
    return ".".join(parts)
