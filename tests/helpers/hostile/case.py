"""The hostile-input catalogue's case type: one CLI invocation fed untrusted files.

Each area contributes cases in a ``tests/helpers/hostile/cases_<area>.py`` module exporting ``CASES``; one
runner (``tests/test_hostile_catalog.py``) runs every case as a subprocess of the real CLI and checks
the exit code, the message, that no traceback and no control character reach the output, and the
time (2 s) and memory (200 MB) bounds. ``benchmarks/reliability.py`` writes the same cases as the
*hostile input* table of ``docs/reliability.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Special:
    """A file that is not plain content: ``fifo`` (a FIFO no one writes to) or ``sparse`` (``size`` bytes, none stored)."""

    kind: str
    size: int = 0


FIFO = Special("fifo")


def write_files(folder: str | Path, files: dict[str, str | bytes | Special]) -> None:
    """Write a case's files into ``folder``."""
    for name, content in files.items():
        target = Path(folder) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Special) and content.kind == "fifo":
            os.mkfifo(target)
        elif isinstance(content, Special):
            with target.open("wb") as handle:
                handle.truncate(content.size)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


@dataclass(frozen=True)
class HostileCase:
    """One hostile input.

    ``argv`` is what follows ``gpu-wizard``; ``{dir}`` in an argument is replaced by the case's
    temporary folder, where ``files`` (relative name → text, bytes or a :class:`Special` file) are
    written first.
    ``stderr_has``/``stdout_has`` are texts the output must contain; ``stdout_lacks`` texts it must
    not (e.g. an injected command on a line of its own).
    """

    name: str
    argv: tuple[str, ...]
    expect_exit: int
    files: dict[str, str | bytes | Special] = field(default_factory=dict)
    stderr_has: tuple[str, ...] = ()
    stdout_has: tuple[str, ...] = ()
    stdout_lacks: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
