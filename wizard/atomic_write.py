"""The one way gpu-wizard writes a file: atomically, privately, and with one clear line when it cannot.

Every file the wizard writes (answers, resume state, backups, reports, saved manifests and scripts,
the crash log) goes through :func:`write_private`: a temporary file in the target's folder, flushed
and synced, mode 0600, then renamed over the target. A crash or a full disk therefore never leaves
half a file, the old file survives any failure, and no temporary file is left behind.

A failure is a :class:`WriteError` (an ``OSError``, so existing ``except OSError`` handlers keep
working) whose text is one line naming the path and what to do: the CLI prints it and exits 2, the
TUI shows it in a dialog.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

_REASONS: dict[int, str] = {
    errno.EISDIR: "it is a folder; give a file name",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EROFS: "the file system is read-only; choose a writable folder",
    errno.ENOSPC: "no space left on the device; free some space or choose another folder",
    errno.EDQUOT: "the disk quota is exceeded; free some space or choose another folder",
    errno.EACCES: "permission denied; choose a file or folder you can write to",
    errno.EPERM: "the file or folder does not allow writing (immutable or not yours); choose another",
    errno.ENAMETOOLONG: "the name is too long",
    errno.ELOOP: "too many symbolic links in the path",
}


class WriteError(OSError):
    """A file could not be written; ``str()`` is one line naming the path and the reason."""

    def __init__(self, code: int, path: Path) -> None:
        reason = _REASONS.get(code) or (os.strerror(code) if code else "unknown error")
        super().__init__(code, reason, str(path))
        self.path = path

    def __str__(self) -> str:
        return f"{self.path}: cannot write: {self.strerror}; the previous file (if any) is unchanged"


def write_private(path: str | os.PathLike[str], data: str | bytes, *, mode: int = 0o600) -> Path:
    """Write ``data`` to ``path`` atomically with ``mode`` (default 0600); returns the path.

    Missing parent folders are created (0700). Raises :class:`WriteError` on any OS error, after
    removing the temporary file; the previous content of ``path`` is untouched.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp: str | None = None
    try:
        if target.is_dir():  # checked first: the rename would fail only after writing the whole file
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(target))
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise WriteError(exc.errno or 0, target) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return target


def write_files(folder: str | os.PathLike[str], files: Mapping[str, str]) -> Path:
    """Write each relative path -> text below ``folder`` (created 0700) with :func:`write_private`; the folder.

    The names are the caller's own (a bundle's), never a user's: they hold no ``..`` and no absolute path.
    """
    target = Path(folder)
    for name, text in files.items():
        write_private(target / name, text)
    return target
