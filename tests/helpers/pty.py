"""Reading a CLI's terminal: a pseudo-terminal's output until a marker, the child's exit or a deadline."""

from __future__ import annotations

import os
import select
import subprocess
import time


def read_until(master: int, marker: bytes, proc: subprocess.Popen[bytes], seconds: float = 30) -> bytes:
    seen = b""
    deadline = time.monotonic() + seconds
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    return seen
