"""A Helm release as Helm records it, and how its values differ from the plan's (``gpu-wizard drift``).

Helm keeps each revision of a release in a Secret ``sh.helm.release.v1.<name>.v<revision>`` (labels ``owner=helm``,
``name``, ``status``; the one ``status=deployed`` is what runs): ``data.release`` holds the release as JSON, gzipped
and base64-encoded (and base64-encoded once more as every Secret's data). :func:`decode_release` reads it within
limits (the encoded text, the gunzipped bytes: a small Secret must not inflate into gigabytes) and keeps only what
drift compares: the chart's version and ``config``, the values the user gave (``--values``/``--set``; the chart's
own defaults fill in the rest). :func:`values_drift` compares them with the values the wizard computes for the plan
(:func:`wizard.engine.render.release_values`), one failed check per value path that differs.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.engine.drift import leaves, same, scalar
from wizard.engine.results import Check, Status

MAX_ENCODED = 4 * 1024 * 1024
"""Characters of ``data.release`` read (the API server stores at most 1 MiB a Secret)."""
MAX_DECODED = 32 * 1024 * 1024
"""Bytes of the release's JSON after gunzip (the operator's chart, its CRDs and manifest: a few MiB)."""
GZIP_MAGIC = b"\x1f\x8b"
HINT = (
    "gpu-wizard apply --answers FILE writes the plan's values and the helm upgrade that carries them; "
    "or change the answers file to what the release holds"
)


class ReleaseError(ValueError):
    """A release Secret that cannot be read: one line saying why."""


@dataclass(frozen=True)
class HelmRelease:
    """What drift needs of one deployed revision."""

    name: str
    namespace: str
    revision: int
    status: str
    chart_version: str
    config: dict[str, Any] = field(default_factory=dict)
    """The user-supplied values (Helm's ``config``), not merged with the chart's defaults."""

    @property
    def subject(self) -> str:
        return f"Helm release {self.namespace}/{self.name}"


def _gunzip(data: bytes) -> bytes:
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    out = inflater.decompress(data, MAX_DECODED)
    if inflater.unconsumed_tail or (len(out) >= MAX_DECODED and not inflater.eof):
        raise ReleaseError(f"its release record is larger than {MAX_DECODED // (1024 * 1024)} MiB unpacked")
    if not inflater.eof:
        raise ReleaseError("its release record is cut short (not a whole gzip stream)")
    return out


def decode_release(secret: Mapping[str, Any]) -> HelmRelease:
    """The release in one of Helm's release Secrets (as the API returns it); ReleaseError when it cannot be read."""
    meta = secret.get("metadata") or {}
    text = (secret.get("data") or {}).get("release")
    if not isinstance(text, str) or not text:
        raise ReleaseError("it has no data.release")
    if len(text) > MAX_ENCODED:
        raise ReleaseError(f"its data.release is larger than {MAX_ENCODED // (1024 * 1024)} MiB")
    try:
        payload = base64.b64decode(base64.b64decode(text, validate=True), validate=True)
    except (binascii.Error, ValueError):
        raise ReleaseError("its data.release is not Helm's base64 encoding") from None
    raw = _gunzip(payload) if payload.startswith(GZIP_MAGIC) else payload  # Helm reads an unzipped one too
    if len(raw) > MAX_DECODED:
        raise ReleaseError(f"its release record is larger than {MAX_DECODED // (1024 * 1024)} MiB")
    try:
        record = json.loads(raw)
    except (ValueError, RecursionError):
        raise ReleaseError("its release record is not JSON") from None
    if not isinstance(record, dict):
        raise ReleaseError("its release record is not a JSON object")
    config = record.get("config") or {}
    chart = record.get("chart") or {}
    metadata = chart.get("metadata") if isinstance(chart, dict) else None
    if not isinstance(config, dict) or not isinstance(metadata, dict):
        raise ReleaseError("its release record has no chart metadata or values of the expected shape")
    labels = meta.get("labels") or {}
    revision = record.get("version")
    return HelmRelease(
        name=str(record.get("name") or labels.get("name") or ""),
        namespace=str(record.get("namespace") or meta.get("namespace") or ""),
        revision=revision if isinstance(revision, int) else 0,
        status=str((record.get("info") or {}).get("status") or labels.get("status") or ""),
        chart_version=str(metadata.get("version") or ""),
        config=config,
    )


def effective_values(defaults: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The chart's defaults with the user's values over them, as Helm coalesces them (a null deletes a default)."""
    merged: dict[str, Any] = dict(defaults)
    for key, value in config.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = effective_values(merged[key], value)
        else:
            merged[key] = value
    return merged


def _at(values: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    value: Any = values
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return False, None
        value = value[key]
    return True, value


def values_drift(
    planned: Mapping[str, Any], defaults: Mapping[str, Any], release: HelmRelease, planned_version: str
) -> list[Check]:
    """The release against the plan: its chart version against the plan's release, then every value the plan sets
    (a leaf of ``planned``) against the release's (its ``config`` over the chart's ``defaults``); a failed check per
    difference, one passed check when everything matches."""
    subject = release.subject
    checks: list[Check] = []
    if release.chart_version != planned_version:
        checks.append(
            Check(
                "helm-chart",
                Status.FAIL,
                f"{subject}: chart version {release.chart_version or '(none)'}, the plan says {planned_version}",
                hint=HINT,
                data={"object": subject, "field": "chart.version", "plan": planned_version,
                      "live": release.chart_version},
            )
        )  # fmt: skip
    live = effective_values(defaults, release.config)
    for path, value in leaves(planned):
        present, found = _at(live, path)
        if (present and same(value, found)) or (not present and value in (None, "", [], {})):
            continue
        where = ".".join(path)
        said = scalar(found) if present else "(not set)"
        checks.append(
            Check(
                "helm-values",
                Status.FAIL,
                f"{subject} values {where}: the plan says {scalar(value) or '(empty)'}, the release has "
                f"{said or '(empty)'}",
                hint=HINT,
                data={"object": subject, "field": f"values.{where}", "plan": value, "live": found if present else None},
            )
        )
    if not checks:
        checks.append(
            Check(
                "helm-values",
                Status.PASS,
                f"{subject} (revision {release.revision}, chart {release.chart_version}): every value the plan sets "
                "matches",
                data={"object": subject},
            )
        )
    return checks
