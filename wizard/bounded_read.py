"""The one bounded reader of untrusted input files: size, time, depth, count and string limits.

Every file a user hands the wizard goes through :func:`load_bounded` (or :func:`read_bounded` and
:func:`check_yaml` where a caller parses the text itself, as the answers file's round-trip loader
does): NodeLists, answers, demo scenarios, kubeconfigs, backups, registry auth files, registries.conf.
Each kind has its :class:`Limits`; anything past one is refused with :class:`InputError`, one line
that names the file (and line) and the limit, never a traceback.

* **Size and time.** A regular file larger than ``max_bytes`` is refused from its size, unread.
  Anything else (``/dev/zero``, a FIFO, a terminal, ``<(command)``) is opened without blocking and
  read through ``poll`` against a deadline of ``read_seconds``: one that never ends, or never starts,
  is refused within it; one that streams is cut at ``max_bytes``.
* **JSON** is parsed by the C decoder, whose own recursion guard ends a deep nesting early
  (``RecursionError``, reported as the depth limit); a cheap count of ``, : [ {`` bounds the number
  of values before anything is built; a walk of the result checks depth, count, string and number
  sizes exactly. **TOML** is parsed by ``tomllib`` and walked the same way.
* **YAML** is checked before any document is built, in linear time: lines, line length, comments,
  flow collections opened on one line (ruamel's scanner looks up to 1,024 characters ahead at each
  ``[`` or ``{``: quadratic), then the parser's event stream (no anchors, aliases or tags; depth,
  node count, scalar and number sizes). The round-trip loader can be driven into unbounded memory by
  nested aliases (billion laughs), into ``RecursionError`` by deep nesting, into ``ValueError`` by a
  5,000-digit integer and into superlinear time by long or many comments; these checks stop each.

It sits at the bottom of the rooms (standard library and ruamel only), so the engine, the demo, the
cluster and the registry rooms share it.
"""

from __future__ import annotations

import json
import os
import re
import select
import stat
import time
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
)

__all__ = [
    "ANSWERS",
    "AUTH_FILE",
    "BACKUP",
    "CERTIFICATE",
    "KUBECONFIG",
    "NODELIST",
    "REGISTRIES_CONF",
    "SCENARIO",
    "BoundsError",
    "InputError",
    "Limits",
    "check_tree",
    "check_yaml",
    "load_bounded",
    "parse_bounded",
    "read_bounded",
]


@dataclass(frozen=True)
class Limits:
    """How much of one kind of file the wizard reads; the defaults suit a small configuration file."""

    kind: str = "a configuration file"
    """What the file is, with its article, for messages: "a NodeList", "an answers file"."""
    max_bytes: int = 1 << 20
    max_lines: int = 500
    max_line_chars: int = 1024
    max_comment_chars: int = 64 << 10
    max_depth: int = 16
    max_nodes: int = 256
    """Values, keys included (a YAML node, a JSON value or key)."""
    max_scalar_chars: int = 512
    max_number_chars: int = 32
    read_seconds: float = 1.0
    """How long a pipe or device may take to send the whole file."""


ANSWERS = Limits(kind="an answers file")
"""A few dozen lines, parsed by the round-trip loader (comments kept): the defaults."""
NODELIST = Limits(
    kind="a NodeList",
    max_bytes=256 << 20,
    max_lines=16_000_000,
    max_line_chars=512 << 10,
    max_comment_chars=1 << 20,
    max_depth=32,
    max_nodes=16_000_000,
    max_scalar_chars=256 << 10,
)
"""``kubectl get nodes -o json|yaml``: a GPU node with NFD's labels, 40 images and its managedFields
(~12 levels deep) is 20–30 KB as kubectl indents it and ~900 values, so this holds about 10,000
nodes; annotations hold at most 256 KiB in all (the API server's own limit), which bounds a string."""
SCENARIO = Limits(
    kind="a demo scenario",
    max_lines=20_000,
    max_line_chars=4096,
    max_depth=16,
    max_nodes=100_000,
    max_scalar_chars=64 << 10,
)
"""A demo scenario: nodes by ``count:`` or ``nodelist:``, a few pages of YAML at most."""
KUBECONFIG = Limits(
    kind="a kubeconfig",
    max_bytes=8 << 20,
    max_lines=200_000,
    max_line_chars=2 << 20,
    max_comment_chars=1 << 20,
    max_depth=16,
    max_nodes=200_000,
    max_scalar_chars=2 << 20,
)
"""Hundreds of clusters with base64 certificate bundles (one line each, a few KiB, more for a CA bundle)."""
BACKUP = Limits(
    kind="a backup",
    max_lines=100_000,
    max_line_chars=64 << 10,
    max_comment_chars=64 << 10,
    max_depth=64,
    max_nodes=200_000,
    max_scalar_chars=256 << 10,
)
"""What ``gpu-wizard apply`` wrote: a ClusterPolicy and a few NVIDIADrivers (tens of KiB, under 15 levels)."""
AUTH_FILE = Limits(kind="an auth file", max_depth=16, max_nodes=100_000, max_scalar_chars=64 << 10)
"""A registry auth file (docker's ``config.json``, containers' ``auth.json``): credentials per registry."""
CERTIFICATE = Limits(kind="a certificate file (PEM)", max_bytes=1 << 20)
"""A CA bundle, client certificate or key: PEM text, read whole (only its size and time are bounded)."""
REGISTRIES_CONF = Limits(
    kind="a registries.conf",
    max_lines=100_000,
    max_line_chars=4096,
    max_depth=16,
    max_nodes=100_000,
    max_scalar_chars=4096,
)
"""containers-registries.conf(5) (TOML): registries, their mirrors and prefixes."""


class InputError(ValueError):
    """The file cannot be used: ``str()`` is one line, ``source:line: field: message``."""

    def __init__(self, message: str, line: int | None = None, field: str = "", source: str = "") -> None:
        self.message, self.line, self.field, self.source = message, line, field, source
        super().__init__(self.render())

    def render(self) -> str:
        where = (
            f"{self.source}:{self.line}: " if self.source and self.line else (f"{self.source}: " if self.source else "")
        )
        return f"{where}{self.field}: {self.message}" if self.field else f"{where}{self.message}"

    def at(self, source: str) -> InputError:
        """The same error, naming the file."""
        return type(self)(self.message, self.line, self.field, source)


class BoundsError(InputError):
    """The text breaks a bound (rather than being unreadable or malformed)."""


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB" if size >= 1 << 20 else f"{size / 1024:g} KiB"


def read_bounded(path: str | os.PathLike[str], limits: Limits) -> str:
    """The file's UTF-8 text, read within ``limits.max_bytes`` and ``limits.read_seconds``; InputError otherwise."""
    source = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError("no such file", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc.__class__.__name__}", source=source) from None
    try:
        mode = os.fstat(fd)
        if stat.S_ISDIR(mode.st_mode):
            raise InputError(f"is a folder; give {limits.kind}", source=source)
        if stat.S_ISREG(mode.st_mode) and mode.st_size > limits.max_bytes:
            raise BoundsError(_too_large(limits), source=source)
        data = _read_regular(fd, limits) if stat.S_ISREG(mode.st_mode) else _read_stream(fd, limits, source)
        text = None if len(data) > limits.max_bytes else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read the file: not UTF-8 text (byte {exc.start})", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc.__class__.__name__}", source=source) from None
    finally:
        os.close(fd)
    if text is None:
        raise BoundsError(_too_large(limits), source=source)
    return text


def _too_large(limits: Limits) -> str:
    limit = limits.max_bytes
    return f"more than {limit:,} bytes; {limits.kind} may hold at most {limit:,} bytes ({_mib(limit)})"


def _read_regular(fd: int, limits: Limits) -> bytes:
    """Up to ``max_bytes + 1`` bytes (a file may grow while it is read), in one buffer."""
    data = os.read(fd, limits.max_bytes + 1)
    while data and len(data) <= limits.max_bytes:
        more = os.read(fd, limits.max_bytes + 1 - len(data))
        if not more:
            break
        data += more
    return data


def _read_stream(fd: int, limits: Limits, source: str) -> bytes | bytearray:
    """A pipe, FIFO or device, read through ``poll`` until its end, ``max_bytes + 1`` or the deadline.

    A NUL byte ends it at once: no text file holds one, and ``/dev/zero`` or ``/dev/urandom`` are
    then refused without filling memory up to the size limit.
    """
    deadline = time.monotonic() + limits.read_seconds
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    data = bytearray()
    while len(data) <= limits.max_bytes:
        left = deadline - time.monotonic()
        # poll before each read: a FIFO no one has opened for writing reads as an empty file at once
        if left <= 0 or not poller.poll(left * 1000):
            state = "still sending" if data else "nothing to read"
            raise InputError(
                f"{state} after {limits.read_seconds:g} s (a pipe or device that {'does not end' if data else 'no one writes to'}); "
                "save the content to a file and give that",
                source=source,
            )
        try:
            chunk = os.read(fd, min(1 << 16, limits.max_bytes + 1 - len(data)))
        except BlockingIOError:
            continue
        if not chunk:
            break
        nul = chunk.find(0)
        if nul >= 0:
            raise InputError(f"cannot read the file: not text (a NUL byte at byte {len(data) + nul:,})", source=source)
        data += chunk
    return data


def load_bounded(path: str | os.PathLike[str], limits: Limits, formats: Iterable[str] = ("json", "yaml")) -> Any:
    """The file's document, read and parsed within ``limits``; InputError (one line, naming the file) otherwise.

    ``formats`` are tried in order among ``json``, ``yaml`` and ``toml``; JSON is not retried as YAML
    when the text opens like JSON (``{`` or ``[``), so its error is the one reported.
    """
    text = read_bounded(path, limits)
    try:
        return parse_bounded(text, limits, tuple(formats))
    except InputError as exc:
        raise exc.at(str(path)) from None


def parse_bounded(text: str, limits: Limits, formats: tuple[str, ...] = ("json", "yaml")) -> Any:
    """``text`` parsed as the first of ``formats`` that reads it, within ``limits``."""
    for number, kind in enumerate(formats):
        last = number == len(formats) - 1
        try:
            if kind == "json":
                return _json(text, limits)
            if kind == "toml":
                return _toml(text, limits)
            check_yaml(text, limits)
            return _yaml(text)
        except _NotThisFormat as exc:
            if last or (kind == "json" and text.lstrip()[:1] in ("{", "[")):
                raise exc.error from None
    raise ValueError(f"no format among {formats}")  # pragma: no cover - formats is never empty


class _NotThisFormat(Exception):
    """The text is malformed in this format (another may read it); ``error`` is what to report."""

    def __init__(self, error: InputError) -> None:
        super().__init__(error.message)
        self.error = error


def _json(text: str, limits: Limits) -> Any:
    # an upper bound on the values (keys count as values): each is opened by , : [ { or is the first
    # (an over-estimate by the strings' own , and : which only makes the bound stricter)
    estimate = text.count(",") + text.count(":") + text.count("[") + text.count("{") + 1
    if estimate > limits.max_nodes:
        raise BoundsError(f"more than {limits.max_nodes:,} values; {limits.kind} needs far fewer")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _NotThisFormat(InputError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})")) from None
    except RecursionError:
        raise BoundsError(f"nested deeper than {limits.max_depth} levels") from None
    except ValueError:  # an integer past Python's 4,300 digits
        raise BoundsError(f"a number of more than {limits.max_number_chars} digits") from None
    check_tree(data, limits)
    return data


def _toml(text: str, limits: Limits) -> Any:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _NotThisFormat(InputError(f"not valid TOML ({exc})")) from None
    except RecursionError:
        raise BoundsError(f"nested deeper than {limits.max_depth} levels") from None
    check_tree(data, limits)
    return data


def check_tree(data: Any, limits: Limits) -> None:
    """Depth, count, string and number limits on a parsed document (iterative: no recursion to exhaust)."""
    biggest = 10**limits.max_number_chars
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    nodes = 0
    while stack:
        value, depth, where = stack.pop()
        nodes += 1
        if nodes > limits.max_nodes:
            raise BoundsError(f"more than {limits.max_nodes:,} values; {limits.kind} needs far fewer")
        if isinstance(value, dict):
            if depth > limits.max_depth:
                raise BoundsError(f"nested deeper than {limits.max_depth} levels", field=where)
            for key, item in value.items():
                field = f"{where}.{key}" if where else str(key)
                if len(str(key)) > limits.max_scalar_chars:
                    raise BoundsError(f"a key of {len(str(key)):,} characters; keys are short names", field=where)
                nodes += 1
                stack.append((item, depth + 1, field[:200]))
        elif isinstance(value, list):
            if depth > limits.max_depth:
                raise BoundsError(f"nested deeper than {limits.max_depth} levels", field=where)
            stack.extend((item, depth + 1, f"{where}[{i}]"[:200]) for i, item in enumerate(value))
        elif isinstance(value, str) and len(value) > limits.max_scalar_chars:
            raise BoundsError(
                f"a value of {len(value):,} characters; no value here is longer than {limits.max_scalar_chars:,}",
                field=where,
            )
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= biggest:
            raise BoundsError(f"a number of more than {limits.max_number_chars} digits", field=where)


def _yaml(text: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise _NotThisFormat(
            InputError(f"not valid YAML ({exc.problem or exc.context or 'malformed'})", line)
        ) from None
    except YAMLError as exc:
        raise _NotThisFormat(InputError(f"not valid YAML ({exc.__class__.__name__})")) from None
    except (ValueError, RecursionError) as exc:  # past the bounds checked, a constructor limit not foreseen
        raise BoundsError(f"a value YAML cannot read here ({exc.__class__.__name__})") from None


# -- YAML, checked before a document is built ----------------------------------------------------------

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
