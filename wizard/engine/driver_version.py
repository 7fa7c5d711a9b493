"""A driver version (``580.126.20``, or a bare branch ``580``) parsed once: its numbers order it, its branch.

Versions come in as text from the answers, the release data, the catalog and the registry's tags; the rules
that compare them (newest first, same branch, a downgrade) take them through :class:`DriverVersion`, so a
version is ordered and its branch worked out one way. Which text ``driver.version`` accepts (a digest, the
refusal of a suffixed tag) stays the plan model's rule (:func:`wizard.engine.plan.check_driver_version`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["DriverVersion", "branch_of", "newest_first"]

_VERSION_RE = re.compile(r"[0-9]+(?:\.[0-9]+)*\Z", re.ASCII)
VERSION_RULE = "a driver version like 580.126.09.1 (digits and dots)"


@dataclass(frozen=True, order=True)
class DriverVersion:
    """A driver version's numbers (what orders it) and its text as written (what is shown and put in tags)."""

    numbers: tuple[int, ...]
    text: str = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> DriverVersion:
        """``text`` as a driver version (surrounding blanks dropped); ValueError when it is not digits and dots."""
        text = text.strip()
        if not _VERSION_RE.match(text):
            raise ValueError(f"{text!r} is not {VERSION_RULE}")
        return cls(tuple(int(part) for part in text.split(".")), text)

    @classmethod
    def parse_or_none(cls, text: str) -> DriverVersion | None:
        """``text`` as a driver version, or None (a digest, a tag, a word)."""
        try:
            return cls.parse(text)
        except ValueError:
            return None

    @property
    def branch(self) -> str:
        """The driver branch: the part before the first dot (``580`` of ``580.126.20``), as written."""
        return branch_of(self.text)

    @property
    def branch_number(self) -> int:
        return self.numbers[0]

    @property
    def is_branch(self) -> bool:
        """A bare branch (``580``): the floating tag precompiled images carry, no exact build."""
        return len(self.numbers) == 1

    def __str__(self) -> str:
        return self.text


def branch_of(version: str) -> str:
    """The branch of any version text: the part before the first dot (a digest or word comes back whole)."""
    return version.strip().split(".", 1)[0]


def newest_first(versions: Iterable[str], *, min_parts: int = 1) -> list[str]:
    """The driver versions among ``versions`` (with at least ``min_parts`` numbers), newest first; other text left out."""
    parsed = (DriverVersion.parse_or_none(text) for text in versions)
    return [v.text for v in sorted((v for v in parsed if v and len(v.numbers) >= min_parts), reverse=True)]
