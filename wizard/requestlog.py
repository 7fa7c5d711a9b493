"""The request log: one line per API-server and registry request, like kubectl's ``-v=6``.

``gpu-wizard -v COMMAND`` writes the lines to stderr, ``GPU_WIZARD_LOG=FILE`` appends them to FILE
(mode 0600), and every run that sends a request keeps its lines in the state folder's
``logs/last-run.log`` (the run before moves to ``previous-run.log``), which the support bundle
includes. A line is ``time kind METHOD URL status ms retries=N``: the URL's user part and the values
of query parameters that carry secrets (``token``, ``password``, signatures …) are replaced by
``***``, and no header or body is ever written, so neither a bearer token nor a password can reach
it. The sinks are opened on the first request: a command that sends none (render from a file,
completion) leaves the kept log of the last real run alone.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

ENV = "GPU_WIZARD_LOG"
MASK = "***"
LAST_RUN = "last-run.log"
PREVIOUS_RUN = "previous-run.log"
MAX_KEPT = 4 << 20
"""The kept log stops growing past 4 MiB (a 5,000-node verification sends tens of thousands of requests)."""
MAX_URL = 400
_SECRET_PARAM = re.compile(
    r"(?i)(token|password|passwd|secret|signature|sig|credential|x-amz-security-token|code|key|auth)"
)

_LOCK = threading.Lock()


class _Sinks:
    """This run's configuration and, once the first request is written, its open files."""

    def __init__(self) -> None:
        self.verbose = False
        self.file: str | None = None
        self.keep: Path | Callable[[], Path] | None = None
        self.opened = False
        self.streams: list[TextIO] = []
        self.kept: TextIO | None = None
        self.kept_size = 0


_run = _Sinks()


def configure(
    *, verbose: bool = False, log_file: str | None = None, keep_dir: Path | Callable[[], Path] | None = None
) -> None:
    """Say where this run's lines go (opened on the first request); ``log_file`` None reads ``$GPU_WIZARD_LOG``.

    ``keep_dir`` may be a function (:func:`wizard.paths.logs_dir`): it is called on the first request, so a command
    that sends none (render from a file) never loads ``platformdirs`` to find the state folder."""
    global _run
    with _LOCK:
        close()
        _run = _Sinks()
        _run.verbose, _run.file, _run.keep = verbose, log_file or os.environ.get(ENV) or None, keep_dir


def close() -> None:
    """Close this run's files (the end of a command); later requests are not written."""
    for sink in _run.streams:
        if sink is not sys.stderr:
            with contextlib.suppress(OSError):
                sink.close()
    _run.streams.clear()
    _run.kept = None
    _run.verbose, _run.file, _run.keep = False, None, None


def enabled() -> bool:
    """Whether a request should be timed and written at all (any sink configured)."""
    return bool(_run.verbose or _run.file or _run.keep)


def redact_url(url: str) -> str:
    """``url`` without its user part and with secret-carrying query values masked."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(
        f"{quote(k, safe='')}={MASK if _SECRET_PARAM.search(k) else quote(v, safe=':/,')}"
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def record(kind: str, method: str, url: str, status: int | str, started: float, retries: int = 0) -> None:
    """Write one request's line: ``kind`` is ``api`` or ``registry``; ``status`` a code or a short failure word."""
    if not enabled():
        return
    now = time.time()
    ms = (time.monotonic() - started) * 1000
    stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
    shown = redact_url(url)
    if len(shown) > MAX_URL:  # an exec's command travels in its query: a probe script is kilobytes
        shown = shown[: MAX_URL - 1] + "…"
    line = f"{stamp} {kind} {method} {shown} {status} {ms:.0f}ms retries={retries}\n"
    with _LOCK:
        if not _run.opened:
            _open()
        for sink in _run.streams:
            if sink is _run.kept:
                if _run.kept_size > MAX_KEPT:
                    continue
                _run.kept_size += len(line)
            with contextlib.suppress(OSError, ValueError):  # a full disk or a closed stderr never fails a request
                sink.write(line)
                sink.flush()


def kept_log(dir_: Path, *, previous: bool = True) -> bytes:
    """A kept run's log (the run before this one by default), ``b""`` when there is none."""
    path = dir_ / (PREVIOUS_RUN if previous else LAST_RUN)
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_KEPT + 4096)
    except OSError:
        return b""


def _private(path: Path, append: bool) -> TextIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o600)
    return open(fd, "a" if append else "w", encoding="utf-8")


def _open() -> None:
    _run.opened = True
    if _run.verbose:
        _run.streams.append(sys.stderr)
    if _run.file:
        try:
            _run.streams.append(_private(Path(_run.file), append=True))
        except OSError as exc:
            sys.stderr.write(f"gpu-wizard: {ENV}={_run.file}: cannot be written ({exc.strerror}); no request log\n")
    if _run.keep is not None:
        keep = _run.keep() if callable(_run.keep) else _run.keep
        with contextlib.suppress(OSError):
            if (keep / LAST_RUN).exists():
                os.replace(keep / LAST_RUN, keep / PREVIOUS_RUN)
            _run.kept = _private(keep / LAST_RUN, append=False)
            _run.streams.append(_run.kept)
