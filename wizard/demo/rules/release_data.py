"""What the simulated operator does differently at each bundled release, from the releases' ``release.yaml``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from pydantic import ValidationError

from wizard.bundled import OPERATOR_RELEASE_FILE, assets, operator_bundles, operator_release_data
from wizard.release_file import ReleaseRules

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")
_MAX_ITEMS = 64


class ReleaseDataError(ValueError):
    """A ``release.yaml`` the demo cannot act on (the message names the file and the key)."""


@dataclass(frozen=True)
class ReleaseData:
    """What the simulated operator does differently at one release (the keys: ``wizard.release_file.ReleaseRules``)."""

    bundle: str
    major_only: frozenset[str]
    major_only_from: dict[str, int]
    repo_config_dirs: dict[str, str]
    gpu_node_os_info: bool
    lib_modules_ids: frozenset[str]
    owner_label: bool
    pool_selects_major: bool
    crd_switch: bool
    images: tuple[str, ...] = ()


def _key(name: str) -> tuple[int, int, int] | None:
    match = _VERSION_RE.match(name)
    return (int(match[1]), int(match[2]), int(match[3] or 0)) if match else None


def _read(bundle: str) -> ReleaseData:
    where = f"assets/operator/{bundle}/{OPERATOR_RELEASE_FILE}"
    try:
        rules = ReleaseRules.model_validate(operator_release_data(bundle))
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ReleaseDataError(f"{where} {'.'.join(map(str, error['loc']))}: {error['msg']}") from None
    return ReleaseData(
        bundle=bundle,
        major_only=frozenset(rules.osTag.majorOnly),
        major_only_from=dict(rules.osTag.majorOnlyFrom),
        repo_config_dirs=dict(rules.repoConfigDirs),
        gpu_node_os_info=rules.gpuNodeOSInfo,
        lib_modules_ids=frozenset(rules.libModulesMountIDs),
        owner_label=rules.nvidiaDriverOwnerLabel,
        pool_selects_major=rules.poolSelectsVersionMajor,
        crd_switch=rules.nvidiaDriverCRDSwitch,
        images=tuple(f"{i.repository}/{i.image}:{i.version}" for i in rules.images),
    )


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
