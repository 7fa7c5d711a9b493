"""TLS contexts for registries with extra CAs or a client certificate, built once per process for the same
material and shared by every client."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Sequence
from pathlib import Path

from wizard.registry.files import read_capped

MAX_PEM = 4 << 20
"""A CA bundle or client certificate larger than this (4 MiB; the Mozilla bundle is 0.3 MiB) is refused unread."""

_TLS_CONTEXTS: dict[tuple[object, ...], ssl.SSLContext] = {}
_TLS_LOCK = threading.Lock()


def _stamp(path: str) -> int:
    try:
        return Path(path).stat().st_mtime_ns
    except OSError:
        return 0  # loading it then names the file


def tls_context(
    ca_file: str | None,
    ca_data: str | None,
    *,
    ca_files: Sequence[str] = (),
    client: tuple[str, str] | None = None,
) -> ssl.SSLContext:
    """A TLS context trusting the system's CAs and these (``ca_file``/``ca_files``: PEM files, ``ca_data``:
    PEM text), presenting ``client`` (certificate file, key file) when given; built once per process for
    the same material (a file by its path and modification time): each build loads the system's CA store
    (a CPU cost the loop notices), and a front end opens a client for every image check. Contexts are safe to share.

    ValueError, one line naming the file, when a CA or the client certificate cannot be used.
    """
    files = tuple(dict.fromkeys([*([ca_file] if ca_file else []), *ca_files]))
    key = (
        tuple((f, _stamp(f)) for f in files),
        ca_data or "",
        tuple((f, _stamp(f)) for f in client) if client else (),
    )
    with _TLS_LOCK:
        context = _TLS_CONTEXTS.get(key)
        if context is None:
            context = ssl.create_default_context()
            for path in files:
                pem = read_capped(Path(path), "CA file", limit=MAX_PEM).decode("ascii", "replace")
                try:
                    context.load_verify_locations(cadata=pem)
                except (ssl.SSLError, ValueError):
                    raise ValueError(f"CA file {path}: no PEM certificate in it") from None
            if ca_data:
                context.load_verify_locations(cadata=ca_data)
            if client:
                for path in client:
                    read_capped(Path(path), "client certificate", limit=MAX_PEM)  # size and readability, one line each
                try:
                    context.load_cert_chain(certfile=client[0], keyfile=client[1])
                except (ssl.SSLError, OSError):
                    raise ValueError(
                        f"client certificate {client[0]}: it and its key {client[1]} are not a PEM certificate "
                        "and the private key that belongs to it"
                    ) from None
            _TLS_CONTEXTS[key] = context
        return context
