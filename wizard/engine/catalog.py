"""The catalog of known precompiled driver tuples, and the support request for a kernel it lacks.

A precompiled driver image exists per (driver version, kernel ``uname -r``, OS tag); NVIDIA builds
only some kernels (gpu-operator issues #910, #933), so a node's kernel may have none. The catalog
(``assets/catalog.yaml``) says which tuples this release *validated* end to end and which are only
*published*; everything else is *unknown* until the registry check answers. For a kernel without a
published tuple, :func:`support_request` writes the text to send to the vendor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from wizard.bundled import asset_data
from wizard.engine.driver_version import DriverVersion, branch_of

__all__ = [
    "CatalogEntry",
    "DriverChoice",
    "TupleStatus",
    "branch_of",
    "catalog_entries",
    "catalog_from_data",
    "driver_versions",
    "parse_catalog",
    "support_request",
    "tuple_status",
    "unpublished",
]

TupleStatus = Literal["validated", "published", "unknown"]
_RANK: dict[TupleStatus, int] = {"validated": 2, "published": 1, "unknown": 0}
_MARKERS: dict[TupleStatus, str] = {"validated": "✓ validated", "published": "published", "unknown": "unknown"}
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


class CatalogEntry(BaseModel):
    """One known tuple; ``tag`` is the precompiled image tag it stands for."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built on first use, not at import

    driver: str
    kernel: str
    os: str
    status: Literal["validated", "published"]
    note: str = ""

    @field_validator("driver")
    @classmethod
    def _driver_version(cls, value: str) -> str:
        if DriverVersion.parse_or_none(value) is None or value != value.strip():
            raise ValueError("must be a driver version like 580.126.09.1")
        return value

    @field_validator("kernel", "os")
    @classmethod
    def _tag_part(cls, value: str) -> str:
        if not value or not _TAG_RE.match(value):
            raise ValueError("must be non-empty and use only letters, digits and . _ -")
        return value

    @property
    def tag(self) -> str:
        """``<driver>-<kernel>-<os>``, the precompiled image tag."""
        from wizard.engine.naming import (
            precompiled_tag,
        )  # not at the top: naming loads the release rules, which the catalog needs not

        return precompiled_tag(self.driver, self.kernel, self.os)

    @property
    def branch(self) -> str:
        """The driver branch (``580`` for ``580.126.09.1``)."""
        return branch_of(self.driver)


@dataclass(frozen=True)
class DriverChoice:
    """One driver version for a picker: its best status on the OS asked about, and a display label."""

    version: str
    status: TupleStatus
    kernels: tuple[str, ...]
    label: str


def parse_catalog(text: str, source: str = "catalog.yaml") -> tuple[CatalogEntry, ...]:
    """Validate catalog YAML; ValueError naming the entry and field when it is wrong."""
    try:
        data = YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise ValueError(f"{source}: not valid YAML: {exc}") from None
    return catalog_from_data(data, source)


def catalog_from_data(data: object, source: str = "catalog.yaml") -> tuple[CatalogEntry, ...]:
    """Validate a catalog's parsed data (see :func:`parse_catalog`)."""
    if not isinstance(data, dict) or data.get("schema") != 1 or not isinstance(data.get("entries"), list):
        raise ValueError(f"{source}: expected 'schema: 1' and an 'entries' list")
    entries: list[CatalogEntry] = []
    seen: set[tuple[str, str, str]] = set()
    for number, raw in enumerate(data["entries"]):
        try:
            entry = CatalogEntry.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "entry"
            raise ValueError(f"{source}: entries[{number}].{field}: {first['msg']}") from None
        key = (entry.driver, entry.kernel, entry.os)
        if key in seen:
            raise ValueError(f"{source}: entries[{number}]: tuple {entry.tag} is listed twice")
        seen.add(key)
        entries.append(entry)
    return tuple(entries)


@cache
def catalog_entries() -> tuple[CatalogEntry, ...]:
    """The bundled catalog (``assets/catalog.yaml``, read from its JSON twin), parsed once."""
    return catalog_from_data(asset_data("catalog.yaml"))


def tuple_status(version: str, kernel: str, tag_os: str) -> TupleStatus:
    """What the catalog knows about one (driver version, kernel, OS tag) tuple.

    An exact driver version gets the entry's status. A bare branch (``580``, the usual precompiled
    ``version``) names a floating tag that may point at a newer build than the one validated, so
    it is at most ``published``.
    """
    version, kernel, tag_os = version.strip(), kernel.strip(), tag_os.strip()
    best: TupleStatus = "unknown"
    for entry in catalog_entries():
        if entry.kernel != kernel or entry.os != tag_os:
            continue
        if entry.driver == version:
            status: TupleStatus = entry.status
        elif "." not in version and entry.branch == version:
            status = "published"
        else:
            continue
        if _RANK[status] > _RANK[best]:
            best = status
    return best


def unpublished(version: str, kernel: str, tag_os: str) -> bool:
    """The catalog lists tuples for ``tag_os`` but not this one: as far as this release knows, no source holds the
    image (a kernel update ran ahead of the image build). An OS the catalog says nothing of is not judged here:
    only a registry check can tell."""
    if tuple_status(version, kernel, tag_os) != "unknown":
        return False
    return any(entry.os == tag_os.strip() for entry in catalog_entries())


def driver_versions(tag_os: str | None = None) -> list[DriverChoice]:
    """Driver versions the catalog knows (on ``tag_os`` if given): validated first, newest first."""
    found: dict[str, tuple[TupleStatus, list[str]]] = {}
    for entry in catalog_entries():
        if tag_os is not None and entry.os != tag_os.strip():
            continue
        status, kernels = found.get(entry.driver, ("unknown", []))
        kernels.append(entry.kernel)
        found[entry.driver] = (entry.status if _RANK[entry.status] > _RANK[status] else status, kernels)
    choices = [
        DriverChoice(version, status, tuple(sorted(set(kernels))), f"{version}  ({_MARKERS[status]})")
        for version, (status, kernels) in found.items()
    ]
    choices.sort(key=lambda c: (-_RANK[c.status], tuple(-n for n in DriverVersion.parse(c.version).numbers)))
    return choices


def support_request(
    node_name: str,
    uname_r: str,
    os_tag: str,
    gpu_product: str,
    driver_version: str,
    *,
    checked: Sequence[str] = (),
) -> str:
    """A ready-to-send request for a precompiled driver image for a kernel that has none.

    ``checked`` lists what else was verified, e.g. ``"nvcr.io/nvidia/driver:580-…: tag not found"``.
    """
    kernel, tag_os = uname_r.strip(), os_tag.strip()
    version = driver_version.strip()
    branch = branch_of(version)
    from wizard.engine.naming import precompiled_tag

    wanted = precompiled_tag(version, kernel, tag_os)
    status = tuple_status(version, kernel, tag_os)
    known = [e for e in catalog_entries() if e.os == tag_os]
    if known:
        known_text = "; ".join(f"{e.tag} ({e.status})" for e in known)
        catalog_line = f"known tuples for {tag_os}: {known_text}"
    else:
        catalog_line = f"no tuple at all is known for {tag_os}"
    lines = [
        f"Subject: precompiled NVIDIA driver image wanted for kernel {kernel} ({tag_os}, branch {branch})",
        "",
        "Hello,",
        "",
        "we install the NVIDIA GPU Operator with precompiled driver containers (driver.usePrecompiled: true).",
        "One of our GPU nodes runs a kernel for which we found no precompiled driver image:",
        "",
        f"  Node:                 {node_name}",
        f"  Kernel (uname -r):    {kernel}",
        f"  OS (image OS tag):    {tag_os}",
        f"  GPU model:            {gpu_product or 'unknown (no nvidia.com/gpu.product label)'}",
        f"  Driver branch wanted: {branch}" + (f" (version {version})" if version != branch else ""),
        f"  Image tag missing:    {wanted}",
        "",
        "What we checked:",
        f"  - the gpu-wizard catalog: this tuple is {status}; {catalog_line}",
        *(f"  - {item}" for item in checked),
        "",
        f"Could you publish a precompiled {branch}-branch driver image for kernel {kernel} on {tag_os},",
        "or tell us which kernel of this OS release is supported for that branch?",
        "",
        "Thank you.",
    ]
    return "\n".join(lines) + "\n"
