"""The bytes of a websocket client (RFC 6455): the server's frames read as they arrive, the client's control
frames written masked, and the head of an HTTP answer (the upgrade's, a proxy's) parsed.

:mod:`wizard.cluster.gateway.websocket` runs the connection around them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

MAX_HEADER = 64 * 1024
"""Bytes of an HTTP answer's head (status line and headers) before it is taken for garbage."""
MAX_MESSAGE = 16 * 1024 * 1024
"""Bytes of one websocket message (its fragments together): an exec's output frame is far smaller."""
_CLOSE, _PING, _PONG = 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    """The server answered the upgrade with another status than 101 (the command never started); ``body``
    is the answer's body (a ``metav1.Status`` naming why: RBAC's "cannot create resource pods/exec", an
    unreachable kubelet), ``headers`` its headers (a 429's ``Retry-After``)."""

    def __init__(self, status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers or {}
        self.body = body


class ProxyRefused(Exception):
    """The proxy did not open the tunnel (its status)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class ProtocolViolation(Exception):
    """The server's answer breaks HTTP or RFC 6455 (said how)."""


def masked_frame(opcode: int, payload: bytes) -> bytes:
    """A client frame (FIN set, masked as RFC 6455 requires). Only control frames are sent (≤ 125 bytes):
    an exec with no stdin never sends data."""
    if len(payload) > 125:
        raise ValueError("control frames carry at most 125 bytes")
    key = os.urandom(4)
    body = bytes(b ^ key[i & 3] for i, b in enumerate(payload))
    return bytes((0x80 | opcode, 0x80 | len(payload))) + key + body


def http_head(buffer: bytearray) -> tuple[int, dict[str, str]] | None:
    """The status and headers (names lower-cased) of an HTTP answer once its head is in ``buffer`` (and
    removed from it); None while it is incomplete."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        if len(buffer) > MAX_HEADER:
            raise ProtocolViolation("the server's HTTP answer has no end of headers")
        return None
    status_line, *lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    del buffer[: end + 4]
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolViolation(f"not an HTTP/1.1 answer: {status_line[:60]!r}")
    headers = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class FrameReader:
    """RFC 6455 frames from the server, as they arrive in pieces: messages go to ``on_message`` whole
    (fragments joined); :meth:`feed` returns the frames to send back (a pong for a ping, the answer to a
    close frame). It holds no reference to its connection (no reference cycle per exec)."""

    def __init__(self, on_message: Callable[[bytes], None]) -> None:
        self.on_message = on_message
        self.replies: list[bytes] = []
        self.buffer = bytearray()
        self.fragments: list[bytes] | None = None
        self.fragmented = 0
        self.closed = False
        """A close frame came (and was answered)."""

    def feed(self, data: bytes) -> bytes:
        """Take ``data``; what to send back (b"" for nothing)."""
        buffer = self.buffer
        buffer += data
        at, size = 0, len(buffer)
        while size - at >= 2 and not self.closed:
            first, second = buffer[at], buffer[at + 1]
            if first & 0x70:  # RSV1-3: meaningful only with an extension, and none was negotiated
                raise ProtocolViolation("a websocket frame with reserved bits set (no extension was agreed)")
            length, head = second & 0x7F, 2
            if length == 126:
                if size - at < 4:
                    break
                length, head = int.from_bytes(buffer[at + 2 : at + 4], "big"), 4
            elif length == 127:
                if size - at < 10:
                    break
                length, head = int.from_bytes(buffer[at + 2 : at + 10], "big"), 10
            if length > MAX_MESSAGE:
                raise ProtocolViolation(f"a websocket frame of {length} bytes (at most {MAX_MESSAGE})")
            if second & 0x80:
                raise ProtocolViolation("the server masked a frame (RFC 6455 forbids it)")
            if size - at < head + length:
                break
            payload = bytes(buffer[at + head : at + head + length])
            at += head + length
            self._frame(bool(first & 0x80), first & 0x0F, payload)
        del buffer[:at]
        if not self.replies:
            return b""
        replies, self.replies = b"".join(self.replies), []
        return replies

    def _frame(self, fin: bool, opcode: int, payload: bytes) -> None:
        if opcode >= 0x8:  # control frames: never fragmented, may come between a message's fragments
            if not fin or len(payload) > 125:
                raise ProtocolViolation("a fragmented or oversized websocket control frame")
            if opcode == _PING:
                self.replies.append(masked_frame(_PONG, payload))
            elif opcode == _CLOSE:
                self.closed = True
                self.replies.append(masked_frame(_CLOSE, payload[:2]))
            elif opcode != _PONG:
                raise ProtocolViolation(f"unknown websocket opcode {opcode}")
            return
        if opcode == 0:
            if self.fragments is None:
                raise ProtocolViolation("a websocket continuation frame without a message to continue")
            self.fragments.append(payload)
            self.fragmented += len(payload)
            if self.fragmented > MAX_MESSAGE:
                raise ProtocolViolation(f"a websocket message over {MAX_MESSAGE} bytes")
            if fin:
                message, self.fragments = b"".join(self.fragments), None
                self.on_message(message)
            return
        if opcode not in (1, 2):
            raise ProtocolViolation(f"unknown websocket opcode {opcode}")
        if self.fragments is not None:
            raise ProtocolViolation("a new websocket message before the last one's final fragment")
        if fin:
            self.on_message(payload)
        else:
            self.fragments, self.fragmented = [payload], len(payload)
