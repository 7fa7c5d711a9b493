"""The one guard that keeps control characters out of everything gpu-wizard prints or writes.

Values from a NodeList, an answers file or the cluster end up in terminal lines, comments of a
generated shell script and printed ``kubectl``/``helm``/``skopeo`` commands. A newline there ends a
comment and starts a command; a carriage return or ``ESC[2K`` hides a line from ``cat``. Every C0
and C1 control character, DEL, the Unicode line and paragraph separators (which editors and
``str.splitlines`` treat as line breaks) and the bidirectional overrides (which reorder what a reader
sees) are replaced by a visible escape such as ``\\x0a``. :func:`printable` does it for one value or
one output; :class:`PrintableStream` applies it to every write of the CLI's stdout and stderr;
:func:`shell_command` is the only way a command is turned into a line of shell text.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from functools import cache
from typing import Any, TextIO

UNSAFE_CHARS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""A regex character-class body: C0, DEL, C1 (NEL included), line/paragraph separators, bidi controls."""
_UNSAFE_RE = re.compile(f"[{UNSAFE_CHARS}]")


@cache
def _pattern(keep: str) -> re.Pattern[str]:
    if not keep:
        return _UNSAFE_RE
    return re.compile(f"(?:(?![{re.escape(keep)}])[{UNSAFE_CHARS}])")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, keep: str = "") -> str:
    """``text`` with every unsafe character written as a visible escape (``\\x1b``), except those in ``keep``.

    ``keep="\\n\\t"`` is for whole outputs, whose own line breaks are structure; a single value
    (a node name, a path) keeps nothing, so it can never end the line or comment it is put in.
    """
    pattern = _pattern(keep)
    if not pattern.search(text):
        return text
    return pattern.sub(_escape, text)


def has_unsafe(text: str) -> bool:
    """Whether ``text`` holds a character :func:`printable` would escape."""
    return _UNSAFE_RE.search(text) is not None


def shell_command(argv: Iterable[str]) -> str:
    """One argv list as a single copy-pasteable, shell-quoted line (a control character cannot split it)."""
    return shlex.join(printable(str(arg)) for arg in argv)


class PrintableStream:
    """A text stream whose writes pass through :func:`printable`, keeping only newlines and tabs.

    The CLI wraps stdout and stderr in it for the time a command runs, so no message, hint or
    rendered output can carry a control character to the terminal or a redirected file.
    """

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(printable(text, keep="\n\t"))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding… of the wrapped stream
        return getattr(self.inner, name)
