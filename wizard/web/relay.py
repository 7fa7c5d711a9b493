"""Browser → app: the terminal's messages, bounded in size and rate, relayed in order; keys are never dropped.

The browser's terminal (``textual.js``) sends one JSON message per input event: ``["stdin", text]``
for a key, a mouse report or a paste, ``["resize", {...}]``, ``["focus"]``, ``["blur"]``,
``["ping", t]``. Each key costs the app some CPU (measured in docs/benchmarks.md), so a client that sends keys faster
than a person could (or one message of 16,000 keys) could keep a session busy for seconds:

* a websocket message is at most :data:`MAX_MESSAGE` bytes (aiohttp closes a longer one with 1009);
* text longer than :data:`LONG_INPUT` characters is not typing: it goes to the app as one bracketed
  paste (one event, as a real paste is), whatever it holds;
* input events are admitted at :data:`EVENTS_PER_SECOND` after a burst of :data:`EVENT_BURST`: past
  that the relay waits (the client's socket backs up), so no key is lost and nothing reordered;
* pasted characters are admitted at :data:`PASTE_CHARS_PER_SECOND` after a burst of
  :data:`PASTE_BURST` (one message's worth); a paste past that is dropped, not queued. The app parses
  a paste character by character and redraws the field it lands in: counted as one event per 1,000
  characters, a paste flood reached 140,000 characters a second and pinned a core (issue 37), and
  queued it would leave the flooder's next keys behind minutes of pastes. No person pastes faster.
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

PASTE_CHARS_PER_SECOND = 2000.0
"""Pasted characters a session accepts per second once its burst is spent."""

PASTE_BURST = float(MAX_MESSAGE)
"""Pasted characters accepted at once: one message of the longest paste."""

DROPPED_PASTE_COST = 0.1
"""Input events a dropped paste costs: its message is read and parsed (~6 µs), at most ~1,500 a second."""

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


def as_input(text: str) -> tuple[str, float, int]:
    """What to send the app for one ``stdin`` message, its cost in input events, and the characters it pastes."""
    if text.startswith(PASTE_START) and text.endswith(PASTE_END):
        inner = text[len(PASTE_START) : -len(PASTE_END)]
        if PASTE_START not in inner and PASTE_END not in inner:
            return text, 1, len(inner)
    if len(text) > LONG_INPUT:
        inner = text.replace(PASTE_START, "").replace(PASTE_END, "")
        return PASTE_START + inner + PASTE_END, 1, len(inner)
    sequences = _SEQUENCE.findall(text)
    return text, len(sequences) + len(text) - sum(map(len, sequences)), 0


class Gate:
    """A token bucket of input events (:meth:`admit` waits while it is empty) and one of pasted characters
    (:meth:`admit_paste` says no while it is short)."""

    def __init__(
        self,
        rate: float = EVENTS_PER_SECOND,
        burst: float = EVENT_BURST,
        paste_rate: float = PASTE_CHARS_PER_SECOND,
        paste_burst: float = PASTE_BURST,
    ) -> None:
        self.rate, self.burst = rate, burst
        self.tokens = burst
        self.stamp = time.monotonic()
        self.paste_rate, self.paste_burst = paste_rate, paste_burst
        self.paste_tokens = paste_burst
        self.paste_stamp = self.stamp
        self.dropped = 0
        """Pasted characters dropped so far (past the rate)."""

    def admit_paste(self, chars: int) -> bool:
        """Whether a paste of ``chars`` characters fits the paste budget now (it is then spent)."""
        now = time.monotonic()
        self.paste_tokens = min(self.paste_burst, self.paste_tokens + (now - self.paste_stamp) * self.paste_rate)
        self.paste_stamp = now
        if chars > self.paste_tokens:
            self.dropped += chars
            return False
        self.paste_tokens -= chars
        return True

    async def admit(self, cost: float) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= cost
        if self.tokens < 0:
            await asyncio.sleep(-self.tokens / self.rate)


async def relay_input(session: Session, websocket: web.WebSocketResponse, gate: Gate) -> None:
    """Browser → app until the browser closes (or the app is gone).

    Every message costs at least one input event, whatever it holds (a message the app has no use for),
    and a dropped paste :data:`DROPPED_PASTE_COST`: a flood of any kind is read at a bounded rate and
    backs up in the client's socket, at little cost to the server, and drains within seconds once it stops.
    """
    async for message in websocket:
        text, cost, pasted = "", 1.0, 0
        envelope: object = None
        if message.type == WSMsgType.TEXT:
            try:
                envelope = json.loads(message.data)
            except ValueError:
                envelope = None
        kind = envelope[0] if isinstance(envelope, list) and envelope else None
        argument = envelope[1] if isinstance(envelope, list) and len(envelope) > 1 else None
        if kind == "stdin" and isinstance(argument, str):
            text, cost, pasted = as_input(argument)
            if pasted and not gate.admit_paste(pasted):
                await gate.admit(DROPPED_PASTE_COST)  # a paste flood: dropped, never queued ahead of the next keys
                continue
        await gate.admit(cost)
        if kind == "stdin" and isinstance(argument, str):
            sent = await session.send(protocol.keystrokes(text))
        elif kind == "resize" and isinstance(argument, dict):
            width = bounded(argument.get("width"), 80, 10, MAX_TERMINAL)
            height = bounded(argument.get("height"), 24, 5, MAX_TERMINAL)
            sent = await session.send(protocol.meta({"type": "resize", "width": width, "height": height}))
        elif kind in ("focus", "blur"):
            sent = await session.send(protocol.meta({"type": kind}))
        elif kind == "ping" and isinstance(argument, str):
            await websocket.send_json(["pong", argument[:32]])
            sent = True
        else:
            sent = True
        if not sent:
            return
