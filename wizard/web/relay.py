"""Browser → app: the terminal's messages, bounded in size and rate, relayed in order and never dropped.

The browser's terminal (``textual.js``) sends one JSON message per input event: ``["stdin", text]``
for a key, a mouse report or a paste, ``["resize", {...}]``, ``["focus"]``, ``["blur"]``,
``["ping", t]``. Each key costs the app some CPU (measured in docs/benchmarks.md), so a client that sends keys faster
than a person could (or one message of 16,000 keys) could keep a session busy for seconds:

* a websocket message is at most :data:`MAX_MESSAGE` bytes (aiohttp closes a longer one with 1009);
* text longer than :data:`LONG_INPUT` characters is not typing: it goes to the app as one bracketed
  paste (one event, as a real paste is), whatever it holds;
* input events are admitted at :data:`EVENTS_PER_SECOND` after a burst of :data:`EVENT_BURST`: past
  that the relay waits (the client's socket backs up), so nothing is lost and nothing reordered.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

from aiohttp import WSMsgType, web

from wizard.web import protocol
from wizard.web.sessions import Session

MAX_MESSAGE = 16 * 1024
"""Bytes of one websocket message from the browser (a paste of a long answers file still fits)."""

LONG_INPUT = 64
"""Characters of one ``stdin`` message past which it is delivered as a paste (a key is at most ~20)."""

EVENTS_PER_SECOND = 150.0
"""Input events a session accepts per second once its burst is spent (fast typing ~15, mouse moves ~60)."""

EVENT_BURST = 300.0
"""Input events accepted at once before :data:`EVENTS_PER_SECOND` applies."""

MAX_TERMINAL = 500
"""Columns or rows a browser may ask for (the app draws every cell: this bounds the work)."""

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
_SEQUENCE = re.compile(r"\x1b(?:\[[0-9;<>?]*[ -/]*[@-~]|O.|.)?")


def bounded(value: object, default: int, low: int, high: int) -> int:
    """``value`` as an integer within ``low``..``high`` (``default`` when it is not a number)."""
    try:
        number = int(str(value))
    except ValueError:
        return default
    return min(max(number, low), high)


def as_input(text: str) -> tuple[str, float]:
    """What to send the app for one ``stdin`` message, and its cost in input events."""
    if text.startswith(PASTE_START) and text.endswith(PASTE_END):
        inner = text[len(PASTE_START) : -len(PASTE_END)]
        if PASTE_START not in inner and PASTE_END not in inner:
            return text, 1 + len(inner) / 1000
    if len(text) > LONG_INPUT:
        inner = text.replace(PASTE_START, "").replace(PASTE_END, "")
        return PASTE_START + inner + PASTE_END, 1 + len(inner) / 1000
    sequences = _SEQUENCE.findall(text)
    return text, len(sequences) + len(text) - sum(map(len, sequences))


class Gate:
    """A token bucket of input events: :meth:`admit` waits while the bucket is empty."""

    def __init__(self, rate: float = EVENTS_PER_SECOND, burst: float = EVENT_BURST) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()

    async def admit(self, cost: float) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= cost
        if self.tokens < 0:
            await asyncio.sleep(-self.tokens / self.rate)


async def relay_input(session: Session, websocket: web.WebSocketResponse, gate: Gate) -> None:
    """Browser → app until the browser closes (or the app is gone)."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = json.loads(message.data)
        except ValueError:
            continue
        if not isinstance(envelope, list) or not envelope:
            continue
        kind = envelope[0]
        argument = envelope[1] if len(envelope) > 1 else None
        if kind == "stdin" and isinstance(argument, str):
            text, cost = as_input(argument)
            await gate.admit(cost)
            sent = await session.send(protocol.keystrokes(text))
        elif kind == "resize" and isinstance(argument, dict):
            await gate.admit(1)
            width = bounded(argument.get("width"), 80, 10, MAX_TERMINAL)
            height = bounded(argument.get("height"), 24, 5, MAX_TERMINAL)
            sent = await session.send(protocol.meta({"type": "resize", "width": width, "height": height}))
        elif kind in ("focus", "blur"):
            await gate.admit(1)
            sent = await session.send(protocol.meta({"type": kind}))
        elif kind == "ping" and isinstance(argument, str):
            await gate.admit(1)
            await websocket.send_json(["pong", argument[:32]])
            sent = True
        else:
            sent = True
        if not sent:
            return
