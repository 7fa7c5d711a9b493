"""The demo's own reader of the bundled releases' ``release.yaml`` (what differs between operator releases).

The engine reads the same files through ``wizard.engine.releases``; the demo imports no engine rule, so
it has this reader and applies the rules in its own code (``operator_rules``, ``sim/``): the two may
disagree, and the peer-case tests hold both to the operator's unit-test cases. Only the keys the
simulated operator acts on are read, each checked for its type and size; a release line is served by
its newest bundled patch, a release the demo does not bundle by the newest line not newer than it (the
oldest for an older one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from wizard.bundled import assets, operator_bundles, operator_release_data

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")
_WORD_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PATH_RE = re.compile(r"^(/[A-Za-z0-9._-]+){1,16}$")
_MAX_ITEMS = 64
_REF_PART_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,254}$")


class ReleaseDataError(ValueError):
    """A ``release.yaml`` the demo cannot act on (the message names the file and the key)."""


@dataclass(frozen=True)
class ReleaseData:
    """What the simulated operator does differently at one release."""

    bundle: str
    """The folder under ``assets/operator/``."""
    major_only: frozenset[str]
    """``osTag.majorOnly``: IDs whose OS tag keeps only the VERSION_ID major."""
    major_only_from: dict[str, int]
    """``osTag.majorOnlyFrom``: ID -> first major that keeps only the major (the major parsed as a number)."""
    repo_config_dirs: dict[str, str]
    """``repoConfigDirs``: RepoConfigPathMap."""
    gpu_node_os_info: bool
    """``gpuNodeOSInfo``: the ClusterPolicy reads the first GPU node's NFD labels (else kernelFullVersion)."""
    lib_modules_ids: frozenset[str]
    """``libModulesMountIDs``: IDs whose precompiled ClusterPolicy driver gets host ``/lib/modules``."""
    owner_label: bool
    """``nvidiaDriverOwnerLabel``: NVIDIADriver pools select on the owner label the operator sets."""
    pool_selects_major: bool
    """``poolSelectsVersionMajor``: a pool whose tag drops the minor selects on ``VERSION_ID.major``."""
    crd_switch: bool
    """``nvidiaDriverCRDSwitch``: the NVIDIADriver controller stops while ``useNvidiaDriverCRD`` is false."""
    images: tuple[str, ...] = ()
    """``images``: every image reference the release's chart names (what NVIDIA's registries publish for it)."""


def _key(name: str) -> tuple[int, int, int] | None:
    match = _VERSION_RE.match(name)
    return (int(match[1]), int(match[2]), int(match[3] or 0)) if match else None


def _words(where: str, value: Any) -> frozenset[str]:
    if not isinstance(value, list) or len(value) > _MAX_ITEMS or not all(isinstance(v, str) for v in value):
        raise ReleaseDataError(f"{where}: a list of at most {_MAX_ITEMS} names")
    if not all(_WORD_RE.match(v) for v in value):
        raise ReleaseDataError(f"{where}: names of letters, digits, '.', '_' and '-'")
    return frozenset(value)


def _map(where: str, value: Any, check: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or len(value) > _MAX_ITEMS:
        raise ReleaseDataError(f"{where}: a map of at most {_MAX_ITEMS} entries")
    for key, item in value.items():
        if not isinstance(key, str) or not _WORD_RE.match(key) or not check(item):
            raise ReleaseDataError(f"{where}: bad entry {key!r}")
    return dict(value)


def _flag(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ReleaseDataError(f"{where}: true or false")
    return value


def _read(bundle: str) -> ReleaseData:
    where = f"assets/operator/{bundle}/release.yaml"
    data = operator_release_data(bundle)
    if not isinstance(data, dict) or not isinstance(data.get("osTag"), dict):
        raise ReleaseDataError(f"{where}: a map with osTag")
    os_tag = data["osTag"]
    return ReleaseData(
        bundle=bundle,
        major_only=_words(f"{where} osTag.majorOnly", os_tag.get("majorOnly")),
        major_only_from=_map(
            f"{where} osTag.majorOnlyFrom",
            os_tag.get("majorOnlyFrom"),
            lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10_000,
        ),
        repo_config_dirs=_map(
            f"{where} repoConfigDirs", data.get("repoConfigDirs"), lambda v: isinstance(v, str) and _PATH_RE.match(v)
        ),
        gpu_node_os_info=_flag(f"{where} gpuNodeOSInfo", data.get("gpuNodeOSInfo")),
        lib_modules_ids=_words(f"{where} libModulesMountIDs", data.get("libModulesMountIDs")),
        owner_label=_flag(f"{where} nvidiaDriverOwnerLabel", data.get("nvidiaDriverOwnerLabel")),
        pool_selects_major=_flag(f"{where} poolSelectsVersionMajor", data.get("poolSelectsVersionMajor")),
        crd_switch=_flag(f"{where} nvidiaDriverCRDSwitch", data.get("nvidiaDriverCRDSwitch")),
        images=_images(f"{where} images", data.get("images")),
    )


def _images(where: str, value: Any) -> tuple[str, ...]:
    """``repository/image:version`` of each ``images`` entry."""
    if not isinstance(value, list) or len(value) > _MAX_ITEMS:
        raise ReleaseDataError(f"{where}: a list of at most {_MAX_ITEMS} entries")
    out = []
    for entry in value:
        parts = [entry.get(key) if isinstance(entry, dict) else None for key in ("repository", "image", "version")]
        if not all(isinstance(p, str) and _REF_PART_RE.match(p) for p in parts):
            raise ReleaseDataError(f"{where}: an entry without repository, image and version: {entry!r}")
        out.append(f"{parts[0]}/{parts[1]}:{parts[2]}")
    return tuple(out)


@cache
def _releases_at(root: str) -> dict[tuple[int, int, int], ReleaseData]:
    del root  # the cache key: the readers read from the same root
    found = sorted((key, name) for name in operator_bundles() if (key := _key(name)) is not None)
    if len(found) > _MAX_ITEMS:
        raise ReleaseDataError(f"{len(found)} operator release folders; at most {_MAX_ITEMS}")
    return {key: _read(name) for key, name in found}


def release_data() -> dict[tuple[int, int, int], ReleaseData]:
    """Every bundled release, oldest first, keyed by (major, minor, patch)."""
    return _releases_at(str(assets()))


def release_lines() -> dict[str, str]:
    """``{"MAJOR.MINOR": bundle}``: each line's newest bundled patch, oldest line first."""
    return {f"{major}.{minor}": data.bundle for (major, minor, _), data in release_data().items()}


def data_for(major: int, minor: int) -> ReleaseData:
    """The rules of the newest bundled line not newer than ``major.minor`` (the oldest line for an older one)."""
    table = release_data()
    if not table:
        raise ReleaseDataError("no operator release folder with a release.yaml in the assets")
    chosen = next(iter(table.values()))
    for (line_major, line_minor, _), data in table.items():
        if (line_major, line_minor) <= (major, minor):
            chosen = data
    return chosen


def data_of(bundle: str) -> ReleaseData:
    """The rules of a bundled folder (``vMAJOR.MINOR.PATCH``); KeyError for one the demo does not carry."""
    for data in release_data().values():
        if data.bundle == bundle:
            return data
    raise KeyError(bundle)
