"""The GPU Operator releases gpu-wizard knows, and what differs between them: the one place releases are known.

A release is data: a folder ``assets/operator/<release>/`` with the chart's values, its CRDs and a
``release.yaml`` (the chart's template differences, the OS tag rule, the repoConfig folders, the driver
branches the release supports, …), read here through ``wizard.bundled`` and validated by the models
in ``wizard.release_file`` (every field bounded: the folder may come from ``GPU_WIZARD_ASSETS``). The engine
and, through it, the CLI and the TUI ask this module; the demo reads the same files through the same
leaf and applies its own rules (``wizard.demo.rules``) so that it can disagree. The default release is the newest bundled
one, by version; a release line (major.minor) is served by its newest bundled patch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, total_ordering

from pydantic import ValidationError

from wizard.bundled import OPERATOR_RELEASE_FILE, assets, operator_bundles, operator_release_data
from wizard.release_file import ChartImage, ReleaseRules

__all__ = [
    "ChartImage",
    "Release",
    "ReleaseRules",
    "default_release",
    "first_release",
    "lines",
    "nearest_rules",
    "rules",
    "rules_of_line",
    "supported_branches",
]

_RELEASE_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?\Z", re.ASCII)
#: More release folders than this is a mistake, not a product.
MAX_RELEASES = 64


@total_ordering
@dataclass(frozen=True)
class Release:
    """A GPU Operator release, ``vMAJOR.MINOR.PATCH`` (a bundled folder's name); ordered by version."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> Release:
        """Parse ``vMAJOR.MINOR.PATCH`` / ``MAJOR.MINOR`` into a Release; ValueError when it is not a version."""
        found = cls.parse_or_none(text)
        if found is None:
            raise ValueError(f"{text!r} is not an operator release like {default_release()}")
        return found

    @classmethod
    def parse_or_none(cls, text: str) -> Release | None:
        """:meth:`parse` without the error (which names the default release, so reads the assets)."""
        match = _RELEASE_RE.match(text.strip())
        return cls(int(match[1]), int(match[2]), int(match[3] or 0)) if match else None

    @property
    def line(self) -> str:
        """The release line, ``MAJOR.MINOR``."""
        return f"{self.major}.{self.minor}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Release):
            return NotImplemented
        return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"


@dataclass(frozen=True)
class _Table:
    by_bundle: dict[str, ReleaseRules]
    lines: dict[str, str]


def _table() -> _Table:
    return _table_at(str(assets()))


@cache
def _table_at(root: str) -> _Table:
    del root  # the cache key: the readers below read from the same root
    found = [(release, name) for name in operator_bundles() if (release := Release.parse_or_none(name)) is not None]
    if not found:
        raise RuntimeError(f"no operator release folder with a {OPERATOR_RELEASE_FILE} in the assets")
    if len(found) > MAX_RELEASES:
        raise RuntimeError(f"{len(found)} operator release folders; at most {MAX_RELEASES}")
    found.sort()
    by_bundle: dict[str, ReleaseRules] = {}
    for _, name in found:
        try:
            by_bundle[name] = ReleaseRules.model_validate(operator_release_data(name))
        except ValidationError as exc:
            raise RuntimeError(f"assets/operator/{name}/{OPERATOR_RELEASE_FILE}: {exc}") from None
    return _Table(by_bundle, {release.line: name for release, name in found})  # newest patch last, so it wins


def lines() -> dict[str, str]:
    """``{"MAJOR.MINOR": bundle folder}`` of every bundled release line, oldest first."""
    return dict(_table().lines)


def default_release() -> str:
    """The newest bundled release (by version): what a plan targets unless told otherwise."""
    return list(_table().lines.values())[-1]


def bundle_of(release: str | Release) -> str | None:
    """The bundled folder serving a release's line, None for a line gpu-wizard does not know."""
    parsed = release if isinstance(release, Release) else Release.parse(release)
    return _table().lines.get(parsed.line)


def rules(release: str | Release) -> ReleaseRules:
    """The rules of a release's line; KeyError for a line gpu-wizard does not know."""
    bundle = bundle_of(release)
    if bundle is None:
        raise KeyError(f"{release} is not a release gpu-wizard knows; valid: {', '.join(lines().values())}")
    return _table().by_bundle[bundle]


def rules_of_line(release: str | Release) -> ReleaseRules | None:
    """The rules of a release's line, None for a line gpu-wizard does not know."""
    bundle = bundle_of(release)
    return None if bundle is None else _table().by_bundle[bundle]


def supported_branches(release: str | Release) -> tuple[list[str], str]:
    """(driver branches the release line supports, its default driver) from its ``release.yaml``; none for
    a line gpu-wizard does not know."""
    found = rules_of_line(release)
    if found is None:
        return [], ""
    return list(found.driverBranches.branches), found.driverBranches.default


def nearest_rules(release: str | Release) -> ReleaseRules:
    """The rules of the newest bundled line not newer than ``release`` (the oldest line for an older one).

    For a live operator of a line gpu-wizard does not bundle: a later release is taken to behave as the
    newest bundled one, an earlier one as the oldest.
    """
    parsed = release if isinstance(release, Release) else Release.parse(release)
    table = _table()
    chosen = next(iter(table.by_bundle.values()))
    for line, bundle in table.lines.items():
        if Release.parse(line) <= Release(parsed.major, parsed.minor):
            chosen = table.by_bundle[bundle]
    return chosen


def first_release(predicate: Callable[[ReleaseRules], bool]) -> Release | None:
    """The oldest bundled release line (``vMAJOR.MINOR.0``) whose rules satisfy ``predicate``."""
    for bundle, found in _table().by_bundle.items():
        if predicate(found):
            parsed = Release.parse(bundle)
            return Release(parsed.major, parsed.minor)
    return None
