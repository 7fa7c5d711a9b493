"""The one reader of the small files the registry room trusts nothing about: auth files, registries.conf,
hosts.toml, CA bundles and client certificates, read with a size cap and one-line errors naming the file."""

from __future__ import annotations

from pathlib import Path

MAX_CONFIG_FILE = 256 * 1024
"""A registries.conf, hosts.toml or certificate larger than this is refused unread."""


def read_capped(path: Path, what: str, *, limit: int = MAX_CONFIG_FILE) -> bytes:
    """A small file's bytes; ValueError (one line naming it) when unreadable or larger than ``limit``."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > limit:
        raise ValueError(f"{what} {path}: larger than {limit >> 10} KiB; not read")
    return raw
