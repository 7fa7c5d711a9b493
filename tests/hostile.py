"""The hostile-input catalogue's case type: one CLI invocation fed untrusted files.

Each area contributes cases in a ``tests/hostile_cases_<area>.py`` module exporting ``CASES``; one
runner (``tests/test_hostile_catalog.py``) runs every case as a subprocess of the real CLI and checks
the exit code, the message, that no traceback and no control character reach the output, and the
time (2 s) and memory (200 MB) bounds. ``benchmarks/reliability.py`` writes the same cases as the
*hostile input* table of ``docs/reliability.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class HostileCase:
    """One hostile input.

    ``argv`` is what follows ``gpu-wizard``; ``{dir}`` in an argument is replaced by the case's
    temporary folder, where ``files`` (relative name → text or bytes) are written first.
    ``stderr_has``/``stdout_has`` are texts the output must contain; ``stdout_lacks`` texts it must
    not (e.g. an injected command on a line of its own).
    """

    name: str
    argv: tuple[str, ...]
    expect_exit: int
    files: dict[str, str | bytes] = field(default_factory=dict)
    stderr_has: tuple[str, ...] = ()
    stdout_has: tuple[str, ...] = ()
    stdout_lacks: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
