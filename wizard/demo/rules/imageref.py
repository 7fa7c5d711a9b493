"""Image references as the simulated container runtime reads them (the distribution reference grammar)."""

from __future__ import annotations

import re

_HOST_RE = re.compile(
    r"^(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])(?:\.(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]))*"
    r"(?::\d+)?$"
)
_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG_RE = re.compile(r"^\w[\w.-]{0,127}$")
_DIGEST_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$")
_NAME_MAX = 255


def parse_reference(reference: str) -> tuple[str, str, str]:
    """(registry host, repository path, tag or digest); ValueError naming what is wrong."""
    text = reference
    if not text or text != text.strip() or any(c.isspace() for c in text):
        raise ValueError(f"{reference!r}: invalid reference format")
    name, _, digest = text.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        host, path = first, rest
        if not _HOST_RE.match(host):
            raise ValueError(f"{reference!r}: invalid reference format")
    else:
        host, path = "docker.io", name
    if host in ("docker.io", "index.docker.io") and "/" not in path:
        path = f"library/{path}"
    if len(f"{host}/{path}") > _NAME_MAX:
        raise ValueError(f"{reference!r}: repository name must not be more than {_NAME_MAX} characters")
    for component in path.split("/"):
        if not _COMPONENT_RE.match(component):
            if component.lower() != component and _COMPONENT_RE.match(component.lower()):
                raise ValueError(f"{reference!r}: repository name must be lowercase")
            raise ValueError(f"{reference!r}: invalid reference format")
    if tag and not _TAG_RE.match(tag):
        raise ValueError(f"{reference!r}: invalid reference format")
    if digest:
        if not _DIGEST_RE.match(digest):
            raise ValueError(f"{reference!r}: invalid reference format")
        return host, path, digest
    return host, path, tag or "latest"
