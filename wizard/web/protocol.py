"""The framing between the server and a session's app process (Textual's web driver protocol).

The app writes ``__GANGLION__\\n`` once it is ready, then packets: one type byte (``D`` terminal
output, ``M`` a JSON meta message such as ``{"type": "exit"}``, ``P`` a packed file delivery), a
4-byte big-endian length and the payload. The server writes the same framing to the app's stdin:
``D`` for keystrokes, ``M`` for ``resize``, ``focus``, ``blur`` and ``quit``.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

READY_LINE = b"__GANGLION__\n"
"""What the app prints once its driver runs, before the first packet."""

MAX_PACKET = 16 * 1024 * 1024
"""A packet larger than this is a broken stream, not a frame (a full 400×200 redraw is far below)."""

PRELUDE_LINES = 20
"""Lines the app may print before it is ready (warnings); more means it is not a Textual app."""


_PRIVATE_MODE = re.compile(rb"\x1b\[\?([0-9;]+)([hl])")
"""DECSET/DECRST: alternate screen, mouse reporting, bracketed paste, cursor shown or hidden."""


class ProtocolError(Exception):
    """The app's output is not the web driver's framing."""


@dataclass(frozen=True)
class Packet:
    """One packet from the app: ``kind`` is ``D``, ``M`` or ``P``."""

    kind: str
    payload: bytes

    def meta(self) -> dict[str, object]:
        """The decoded JSON of an ``M`` packet ({} when it is not an object)."""
        data = json.loads(self.payload)
        return data if isinstance(data, dict) else {}


def encode(kind: bytes, payload: bytes) -> bytes:
    """One packet in the driver's framing."""
    return kind + len(payload).to_bytes(4, "big") + payload


def keystrokes(text: str) -> bytes:
    """A ``D`` packet with what the browser's terminal typed."""
    return encode(b"D", text.encode("utf-8"))


def meta(message: dict[str, object]) -> bytes:
    """An ``M`` packet (resize, focus, blur, quit)."""
    return encode(b"M", json.dumps(message).encode("utf-8"))


def track_modes(output: bytes, modes: dict[str, str]) -> None:
    """Note in ``modes`` the terminal modes that ``output`` sets or resets (``"1049"`` → ``"h"``)."""
    if b"\x1b[?" not in output:
        return
    for numbers, action in _PRIVATE_MODE.findall(output):
        for number in numbers.split(b";"):
            modes[number.decode("ascii")] = action.decode("ascii")


def replay_modes(modes: dict[str, str]) -> bytes:
    """What puts a fresh browser terminal in the modes the app set earlier, on a cleared screen."""
    return "".join(f"\x1b[?{number}{action}" for number, action in modes.items()).encode("ascii") + b"\x1b[2J"


async def wait_until_ready(stream: asyncio.StreamReader) -> None:
    """Skip what the app prints before its driver starts; ProtocolError if it never does."""
    for _ in range(PRELUDE_LINES):
        line = await stream.readline()
        if not line:
            raise ProtocolError("the app ended before it was ready")
        if line == READY_LINE:
            return
    raise ProtocolError("the app printed no ready line")


async def read_packet(stream: asyncio.StreamReader) -> Packet | None:
    """The next packet, or None at the end of the stream."""
    try:
        header = await stream.readexactly(5)
        size = int.from_bytes(header[1:], "big")
        if size > MAX_PACKET:
            raise ProtocolError(f"a packet of {size} bytes")
        payload = await stream.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
    kind = chr(header[0])
    if kind not in "DMP":
        raise ProtocolError(f"unknown packet type {kind!r}")
    return Packet(kind, payload)
