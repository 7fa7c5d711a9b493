"""The OCI distribution API's wire details the client reads and sends: manifest media types, error bodies, paging.

``MANIFEST_ACCEPT`` goes with every manifest request (see :mod:`wizard.registry.client` for why all
four types); :func:`registry_message` words a distribution error body's first error, and
:func:`next_link` follows a tag list's ``Link`` pagination header.
"""

from __future__ import annotations

import json
import re
from typing import Any

MANIFEST_MEDIA_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
MANIFEST_ACCEPT = ", ".join(MANIFEST_MEDIA_TYPES)


def json_object(body: bytes) -> dict[str, Any]:
    """A JSON body that must be an object; ValueError otherwise (not UTF-8, not JSON, not an object)."""
    data = json.loads(body.decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not an object")
    return data


def registry_message(body: bytes) -> str:
    """The first ``errors[].message`` of a distribution error body, if there is one."""
    try:
        errors = json_object(body).get("errors")
    except (ValueError, UnicodeDecodeError):
        return ""
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        code, message = errors[0].get("code", ""), errors[0].get("message", "")
        return f"{code}: {message}".strip(": ") if code or message else ""
    return ""


def next_link(header: str) -> str | None:
    """The path of a ``Link: </v2/…?last=…>; rel="next"`` pagination header."""
    match = re.search(r'<([^>]+)>\s*;\s*rel="?next"?', header)
    if not match:
        return None
    target = match[1]
    return re.sub(r"^https?://[^/]+", "", target)
