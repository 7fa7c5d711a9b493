"""The node shell's text tools: commands that read only their arguments and stdin, never the node.

``printf``, ``echo``, ``base64``, ``tr -s``, ``head``/``tail``/``wc`` (``-c``: bytes), ``true``,
``false``, ``sleep``, as coreutils and busybox print them. The commands that look at a node or a
container (files, mounts, ``nvidia-smi``, ``chroot``) are :mod:`wizard.demo.sim.nodecmd`'s, which
dispatches to these by name (:data:`TEXT_COMMANDS`).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from functools import lru_cache

Result = tuple[int, str, str]
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r"}


@lru_cache(maxsize=256)
def _format_pieces(fmt: str) -> tuple[tuple[str, str], ...]:
    """A ``printf`` format as pieces: ("lit", text) or ("conv", directive letter); read once per format
    (every node of a probe script prints with the same few formats)."""
    pieces: list[tuple[str, str]] = []
    text, i = "", 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "\\" and i + 1 < len(fmt):
            text += _ESCAPES.get(fmt[i + 1], "\\" + fmt[i + 1])
            i += 2
        elif ch == "%" and i + 1 < len(fmt):
            if fmt[i + 1] == "%":
                text += "%"
            else:
                if text:
                    pieces.append(("lit", text))
                    text = ""
                pieces.append(("conv", fmt[i + 1]))
            i += 2
        else:
            text += ch
            i += 1
    if text:
        pieces.append(("lit", text))
    return tuple(pieces)


def printf(args: list[str], stdin: str = "") -> Result:
    """``printf FORMAT [ARG]...``: ``%s``, ``%d``, ``%%`` and backslash escapes; the format repeats for extra args."""
    if not args:
        return 2, "", "printf: usage: printf format [arguments]\n"
    pieces, rest = _format_pieces(args[0]), args[1:]
    out, err = "", ""
    while True:
        used = 0
        for kind, text in pieces:
            if kind == "lit":
                out += text
                continue
            if text not in "sd":
                return 1, out, f"printf: %{text}: invalid directive\n"
            value = rest[used] if used < len(rest) else ""
            used += 1
            if text == "d":
                if value and not value.lstrip("-").isdigit():
                    err += f"printf: {value}: invalid number\n"
                    value = "0"
                value = str(int(value or "0"))
            out += value
        rest = rest[used:]
        if not rest or not used:
            break
    return (1 if err else 0), out, err


def base64_(args: list[str], stdin: str) -> Result:
    """``base64 [-w COLS] [-d]`` of stdin (coreutils: 76 columns unless ``-w 0``)."""
    wrap, decode, it = 76, False, iter(args)
    for arg in it:
        if arg in ("-d", "--decode"):
            decode = True
        elif arg in ("-w", "--wrap"):
            value = next(it, "")
            if not value.isdigit():
                return 1, "", f"base64: invalid wrap size: '{value}'\n"
            wrap = int(value)
        elif arg.startswith("-w") and arg[2:].isdigit():
            wrap = int(arg[2:])
    if decode:
        try:
            return 0, base64.b64decode("".join(stdin.split()), validate=True).decode(errors="replace"), ""
        except (binascii.Error, ValueError):
            return 1, "", "base64: invalid input\n"
    text = base64.b64encode(stdin.encode()).decode()
    if wrap:
        text = "\n".join(text[i : i + wrap] for i in range(0, len(text), wrap))
    return 0, text + "\n" if text else "", ""


def squeeze(args: list[str], stdin: str) -> Result | None:
    """``tr -s SET``: runs of a character of SET as one; None for any other form of ``tr``."""
    if len(args) != 2 or args[0] != "-s":
        return None
    return 0, re.sub(f"([{re.escape(args[1])}])\\1+", r"\1", stdin), ""


def echo(args: list[str], stdin: str = "") -> Result:
    newline = args[:1] != ["-n"]
    words = args[1:] if not newline else args
    return 0, " ".join(words) + ("\n" if newline else ""), ""


def wc(args: list[str], stdin: str) -> Result:
    if "-c" in args:
        return 0, f"{len(stdin.encode())}\n", ""
    return 0, f"{len(stdin.splitlines(keepends=True))}\n", ""


def head(args: list[str], stdin: str) -> Result:
    if "-c" in args:
        index = args.index("-c")
        value = args[index + 1] if index + 1 < len(args) else ""
        if not value.isdigit():
            return 1, "", f"head: invalid number of bytes: '{value}'\n"
        return 0, stdin.encode()[: int(value)].decode(errors="ignore"), ""
    return 0, "".join(stdin.splitlines(keepends=True)[: _line_count(args)]), ""


def tail(args: list[str], stdin: str) -> Result:
    count = _line_count(args)
    return 0, "".join(stdin.splitlines(keepends=True)[-count:] if count else []), ""


def _line_count(args: list[str]) -> int:
    count = 10
    for i, arg in enumerate(args):
        if arg == "-n" and i + 1 < len(args) and args[i + 1].isdigit():
            count = int(args[i + 1])
        elif arg.startswith("-") and arg[1:].isdigit():
            count = int(arg[1:])
    return count


def _true(args: list[str], stdin: str) -> Result:
    return 0, "", ""


def _false(args: list[str], stdin: str) -> Result:
    return 1, "", ""


#: Command name -> (args, stdin) -> result (None: not a form this tool knows; the shell looks further).
TEXT_COMMANDS: dict[str, Callable[[list[str], str], Result | None]] = {
    "true": _true,
    ":": _true,
    "sleep": _true,
    "false": _false,
    "printf": printf,
    "base64": base64_,
    "tr": squeeze,
    "echo": echo,
    "wc": wc,
    "head": head,
    "tail": tail,
}
