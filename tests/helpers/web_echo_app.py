"""A stand-in for a session's app that speaks the web driver's framing (``wizard/web/protocol.py``).

It prints the ready line and a first frame, then, for every ``D`` packet the server writes to its
stdin, appends the payload to ``$ECHO_LOG`` (if set) and writes it back as terminal output;
``M`` packets are answered with ``{"type": "seen", ...}`` logged the same way. It quits on a ``quit``
meta or at the end of its input, as the real app does. Used where a test needs a session's process
without the wizard's start-up cost: the pool's bookkeeping, and what reaches the app from a
browser's keys (exactly, in order).
"""

from __future__ import annotations

import json
import os
import sys


def packet(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


def main() -> None:
    out = sys.stdout.buffer
    log_path = os.environ.get("ECHO_LOG")
    log = open(log_path, "ab", buffering=0) if log_path else None  # noqa: SIM115 (open for the whole run)
    out.write(b"__GANGLION__\n")
    out.write(packet(b"D", b"\x1b[?1049h\x1b[?25l\x1b[?2004h" + b"echo app ready " + b"." * 1100))
    out.flush()
    stdin = sys.stdin.buffer
    while header := stdin.read(5):
        if len(header) < 5:
            break
        payload = stdin.read(int.from_bytes(header[1:], "big"))
        if header[:1] == b"D":
            if log is not None:
                log.write(payload)
            out.write(packet(b"D", payload))
        elif header[:1] == b"M":
            meta = json.loads(payload)
            if meta.get("type") == "quit":
                break
            out.write(packet(b"D", b"[meta " + meta.get("type", "?").encode() + b"]"))
        out.flush()
    out.write(packet(b"M", json.dumps({"type": "exit"}).encode()))
    out.flush()


if __name__ == "__main__":
    main()
