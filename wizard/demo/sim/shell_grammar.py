"""The grammar of the demo's node shell: a script read into lists, pipelines, commands and words before any command runs.

Lists (``;``, newline, ``&&``, ``||``), pipelines (``|``), quoting (``'…'``, ``"…"``, ``\\``), the
parts of a word that expand later (``$name``, ``${name}``, ``$?``, ``$(…)``), leading assignments
(``name=value``) and redirections (``>``, ``>>``, ``2>``, ``2>&1``) with their targets. A script
text is parsed once (every node of a probe runs the same one); :class:`wizard.demo.sim.shell.Shell`
runs what it reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
Part = tuple[str, str, bool]
"""(``lit`` | ``var`` | ``cmd``, text, quoted)."""


@dataclass
class Word:
    parts: list[Part] = field(default_factory=list)
    quoted: bool = False
    literal: list[str] | None = None
    """Its fields when it expands nothing (set by the parser: the same for every run of the script)."""
    variable: str | None = None
    """The name when the word is one quoted parameter (``"$o"``, an assignment's ``$?``): its one field is the value."""


@dataclass
class Command:
    words: list[Word] = field(default_factory=list)
    """The words after the leading assignments (the command name and its arguments)."""
    redirs: list[tuple[int, str, Word | None]] = field(default_factory=list)
    """(fd, ``>`` | ``>>`` | ``>&1``, target)."""
    assignments: list[tuple[str, Word]] = field(default_factory=list)
    """Leading ``name=value`` words: (name, value)."""


class ShellSyntaxError(Exception):
    pass


def _matching_paren(text: str, start: int) -> int:
    """Index of the ``)`` closing the ``$(`` whose body starts at ``start``."""
    depth, quote, i = 1, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ShellSyntaxError("unterminated $(")


def _dollar(text: str, i: int, quoted: bool) -> tuple[Part, int]:
    """The expansion at ``text[i] == '$'``: (part, index after it)."""
    nxt = text[i + 1] if i + 1 < len(text) else ""
    if nxt == "(":
        end = _matching_paren(text, i + 2)
        return ("cmd", text[i + 2 : end], quoted), end + 1
    if nxt == "?":
        return ("var", "?", quoted), i + 2
    if nxt == "{":
        end = text.find("}", i + 2)
        if end < 0:
            raise ShellSyntaxError("bad substitution")
        return ("var", text[i + 2 : end], quoted), end + 1
    match = _NAME.match(text, i + 1)
    if match:
        return ("var", match[0], quoted), match.end()
    return ("lit", "$", quoted), i + 1


def _joined(parts: list[Part]) -> list[Part]:
    """Adjacent literals of the same quoting as one part (the parser reads unquoted text a character at a
    time; a probe script's words expanded character by character were most of its run time)."""
    out: list[Part] = []
    for part in parts:
        if out and part[0] == "lit" and out[-1][0] == "lit" and out[-1][2] == part[2]:
            out[-1] = ("lit", out[-1][1] + part[1], part[2])
        else:
            out.append(part)
    return out


def _seal(word: Word) -> None:
    """Join the word's adjacent literals and, when it expands nothing, keep its fields."""
    word.parts = _joined(word.parts)
    if all(kind == "lit" for kind, _, _ in word.parts):
        text = "".join(text for _, text, _ in word.parts)
        word.literal = [text] if text or word.quoted else []
    elif len(word.parts) == 1 and word.parts[0][0] == "var" and word.parts[0][2]:  # "$o", not ""$o
        word.variable = word.parts[0][1]


def _split_assignments(command: Command) -> None:
    """Move the command's leading ``name=value`` words to its assignments (decided by the text alone)."""
    words = command.words
    while words and words[0].parts and words[0].parts[0][0] == "lit" and not words[0].parts[0][2]:
        head = "".join(p[1] for p in _leading_literals(words[0]))
        match = _ASSIGN.match(head)
        if not match:
            break
        value = Word(_drop_prefix(words[0].parts, match.end()), quoted=True)
        _seal(value)
        command.assignments.append((match[1], value))
        words.pop(0)


@lru_cache(maxsize=256)
def parse(script: str) -> list[tuple[str, list[Command]]]:
    """The script as [(connector before, pipeline of commands)]; connector ``;``, ``&&`` or ``||``.

    Cached (every node runs the same script text): the result is shared, so it is never changed."""
    items: list[tuple[str, list[Command]]] = []
    connector, pipeline, command = ";", [], Command()
    word: Word | None = None
    pending: tuple[int, str] | None = None
    """A redirection waiting for its target word."""

    def end_word() -> None:
        nonlocal word, pending
        if word is None:
            return
        _seal(word)
        if pending is not None:
            command.redirs.append((pending[0], pending[1], word))
            pending = None
        else:
            command.words.append(word)
        word = None

    def end_command() -> None:
        nonlocal command
        end_word()
        if pending is not None:
            raise ShellSyntaxError("redirection without a target")
        if command.words or command.redirs:
            _split_assignments(command)
            pipeline.append(command)
        command = Command()

    def end_pipeline(next_connector: str) -> None:
        nonlocal pipeline, connector
        end_command()
        if pipeline:
            items.append((connector, pipeline))
        elif next_connector != ";":
            raise ShellSyntaxError(f"unexpected {next_connector}")
        pipeline, connector = [], next_connector

    i = 0
    while i < len(script):
        ch = script[i]
        if ch in " \t":
            end_word()
        elif ch in ";\n":
            end_pipeline(";")
        elif script.startswith(("&&", "||"), i):
            end_pipeline(script[i : i + 2])
            i += 1
        elif ch == "|":
            end_command()
        elif ch == "#" and word is None:
            while i < len(script) and script[i] != "\n":
                i += 1
            continue
        elif ch == ">" or (ch in "12" and word is None and script.startswith(">", i + 1)):
            end_word()
            fd = 1
            if ch != ">":
                fd, i = int(ch), i + 1
            if script.startswith(">&", i):
                if not script.startswith(">&1", i) and not script.startswith(">&2", i):
                    raise ShellSyntaxError("only >&1 and >&2 are supported")
                command.redirs.append((fd, f">&{script[i + 2]}", None))
                i += 3
                continue
            op = ">>" if script.startswith(">>", i) else ">"
            pending = (fd, op)
            i += len(op)
            continue
        elif ch == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unterminated quoted string")
            word = word or Word()
            word.quoted = True
            word.parts.append(("lit", script[i + 1 : end], True))
            i = end
        elif ch == '"':
            word = word or Word()
            word.quoted = True
            i += 1
            text = ""
            while i < len(script) and script[i] != '"':
                c = script[i]
                if c == "\\" and i + 1 < len(script) and script[i + 1] in '"\\$`\n':
                    text += script[i + 1]
                    i += 2
                elif c == "$":
                    if text:
                        word.parts.append(("lit", text, True))
                        text = ""
                    part, i = _dollar(script, i, True)
                    word.parts.append(part)
                else:
                    text += c
                    i += 1
            if i >= len(script):
                raise ShellSyntaxError("unterminated quoted string")
            if text:
                word.parts.append(("lit", text, True))
        elif ch == "\\":
            word = word or Word()
            if i + 1 < len(script) and script[i + 1] != "\n":
                word.parts.append(("lit", script[i + 1], True))
            i += 1
        elif ch == "$":
            word = word or Word()
            part, i = _dollar(script, i, False)
            word.parts.append(part)
            continue
        else:
            word = word or Word()
            word.parts.append(("lit", ch, False))
        i += 1
    end_pipeline(";")
    return items


def _leading_literals(word: Word) -> list[Part]:
    out = []
    for part in word.parts:
        if part[0] != "lit" or part[2]:
            break
        out.append(part)
    return out


def _drop_prefix(parts: list[Part], count: int) -> list[Part]:
    """``parts`` without their first ``count`` characters (all in leading unquoted literals)."""
    out: list[Part] = []
    left = count
    for part in parts:
        if left > 0 and part[0] == "lit" and not part[2]:
            if len(part[1]) <= left:
                left -= len(part[1])
                continue
            out.append((part[0], part[1][left:], part[2]))
            left = 0
            continue
        out.append(part)
    return out
