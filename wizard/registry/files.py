"""The registry room's door to the one bounded reader (:mod:`wizard.bounded_read`) for the small files it
trusts nothing about: registries.conf, hosts.toml, CA bundles and client certificates. A file larger than
its cap, a FIFO or device that never ends, or text that is not UTF-8 is one ValueError naming the file."""

from __future__ import annotations

from pathlib import Path

from wizard.bounded_read import BoundsError, InputError, Limits, read_bounded

MAX_CONFIG_FILE = 256 * 1024
"""A registries.conf, hosts.toml or certificate larger than this is refused unread."""


def read_capped(path: Path, what: str, *, limit: int = MAX_CONFIG_FILE) -> bytes:
    """A small file's bytes; ValueError (one line naming it) when unreadable or larger than ``limit``."""
    try:
        return read_bounded(path, Limits(kind=f"a {what}", max_bytes=limit)).encode()
    except BoundsError:
        raise ValueError(f"{what} {path}: larger than {limit >> 10} KiB; not read") from None
    except InputError as exc:
        raise ValueError(f"{what} {path}: cannot be read ({exc.message})") from None
