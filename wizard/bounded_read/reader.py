"""Reading a file within its limits (size, and time for pipes and devices) and parsing it within them."""

from __future__ import annotations

import json
import os
import select
import stat
import time
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from wizard.bounded_read.limits import BoundsError, InputError, Limits
from wizard.bounded_read.yaml_checks import check_yaml


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
        regular = stat.S_ISREG(mode.st_mode)
        data = _read_regular(fd, limits, mode.st_size) if regular else _read_stream(fd, limits, source)
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


def _read_regular(fd: int, limits: Limits, size: int) -> bytes:
    """Up to ``max_bytes + 1`` bytes in one buffer sized from the file's size (which may grow as it is
    read, or be 0 for a file of ``/proc``): nothing is allocated for bytes that are not there."""
    chunks = [os.read(fd, min(size, limits.max_bytes) + 1)]
    total = len(chunks[0])
    while chunks[-1] and total <= limits.max_bytes:
        chunks.append(os.read(fd, min(1 << 20, limits.max_bytes + 1 - total)))
        total += len(chunks[-1])
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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
    import tomllib  # here: only registries.conf is TOML, and most processes never read one

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
