"""What the pull registry's precompiled tags serve: the one rule for the Mode step, the Driver step and ``answers init``.

A precompiled image is tagged ``<branch>-<kernel>-<os>`` (``580-5.15.0-1063-nvidia-ubuntu22.04``,
:func:`wizard.engine.naming.precompiled_image`). A branch serves the cluster only when the registry holds its tag for
every GPU (kernel, OS) group: :func:`held_branches` lists those (on a branch the release supports, its default
branch first, then newest), :func:`missing_tags` the exact tags a branch still lacks (the fix a Secure Boot node
needs before precompiled can work there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wizard.engine.driver_version import branch_of
from wizard.engine.naming import UNKNOWN_OS_TAG, image_tag, precompiled_image, precompiled_suffix, tagged_versions

__all__ = ["held_branches", "missing_tags", "release_branches", "tag_for"]


def tag_for(branch: str, kernel: str, tag_os: str) -> str:
    """The precompiled tag of ``branch`` for one (kernel, OS tag) group ("" for an OS or kernel no tag is made for)."""
    if tag_os == UNKNOWN_OS_TAG:
        return ""
    try:
        return image_tag(precompiled_image("x", "driver", branch, kernel, tag_os))
    except ValueError:
        return ""


def release_branches(release: str) -> tuple[list[str], str]:
    """(the driver branches ``release`` supports, its default branch), from its ``release.yaml``; none for a line
    gpu-wizard does not know."""
    from wizard.engine.releases import rules_of_line

    rules = rules_of_line(release) if release else None
    if rules is None:
        return [], ""
    return [branch_of(b) for b in rules.driverBranches.branches], branch_of(rules.driverBranches.default)


def _branches_per_group(tags: Iterable[str], groups: Sequence[tuple[str, str]]) -> list[set[str]] | None:
    """Per group, the branches the registry holds its precompiled tag of; None when a group can have no tag."""
    held = set(tags)
    per_group = []
    for kernel, tag_os in groups:
        if not tag_for("0", kernel, tag_os):  # an OS or kernel no tag is made for
            return None
        per_group.append({v for v in tagged_versions(held, precompiled_suffix(kernel, tag_os)) if v.isdigit()})
    return per_group


def _ordered(branches: Iterable[str], release: str) -> list[str]:
    """Branches the release supports (all when it names none), its default first, then newest."""
    supported, default = release_branches(release)
    kept = [b for b in set(branches) if not supported or b in supported]
    return sorted(kept, key=lambda b: (b != default, -int(b)))


def held_branches(tags: Iterable[str], groups: Sequence[tuple[str, str]], release: str) -> list[str]:
    """The driver branches with a precompiled tag for every (kernel, OS tag) group in ``tags``, best first: a branch
    the registry cannot serve to some group is no offer, nor one the release does not support."""
    per_group = _branches_per_group(tags, groups)
    if not groups or per_group is None:
        return []
    return _ordered(set.intersection(*per_group), release)


def missing_tags(tags: Iterable[str], groups: Sequence[tuple[str, str]], release: str) -> list[str]:
    """The exact tags the registry lacks before precompiled can serve every group ([] when a branch serves them all):
    on the supported branch it holds for the most groups (the release's default branch when it holds none)."""
    tags = list(tags)
    per_group = _branches_per_group(tags, groups)
    if not groups or per_group is None:
        return []
    if set.intersection(*per_group) & set(_ordered(set.union(*per_group), release)):
        return []
    supported, default = release_branches(release)
    candidates = _ordered(set.union(*per_group), release) or [default or (supported or ["580"])[0]]
    branch = max(candidates, key=lambda b: sum(b in found for found in per_group))  # max keeps the first of a tie
    return [
        tag_for(branch, kernel, tag_os)
        for (kernel, tag_os), found in zip(groups, per_group, strict=True)
        if branch not in found
    ]


#: Tags read at most from the pull registry's driver repository before Mode (nvcr.io's holds a few thousand): a
#: registry past it is listed in part, and a branch it leaves out is not offered (never one it does not hold).
LIST_LIMIT = 20_000
