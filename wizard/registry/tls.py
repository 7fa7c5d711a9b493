"""TLS contexts for registries with extra CAs, built once per process for the same CAs and shared by every client."""

from __future__ import annotations

import ssl
import threading
from pathlib import Path

_TLS_CONTEXTS: dict[tuple[str, int, str], ssl.SSLContext] = {}
_TLS_LOCK = threading.Lock()


def tls_context(ca_file: str | None, ca_data: str | None) -> ssl.SSLContext:
    """A TLS context trusting the system's CAs and these, built once per process for the same CAs (a CA file
    by its path and modification time): each build loads the system's CA store, 40-200 ms of CPU, and a
    front end opens a client for every image check. Contexts are safe to share between connections."""
    stamp = Path(ca_file).stat().st_mtime_ns if ca_file else 0
    key = (ca_file or "", stamp, ca_data or "")
    with _TLS_LOCK:
        context = _TLS_CONTEXTS.get(key)
        if context is None:
            context = ssl.create_default_context()
            context.load_verify_locations(cafile=ca_file, cadata=ca_data)
            _TLS_CONTEXTS[key] = context
        return context
