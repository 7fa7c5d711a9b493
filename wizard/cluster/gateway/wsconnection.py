"""One exec's websocket connection as an :class:`asyncio.Protocol`: proxy tunnel, TLS in memory, upgrade, frames.

:class:`Connection` is driven by :class:`wizard.cluster.gateway.websocket.Dialer`. It is dialled either for
an exec, which hands it its upgrade request at once, or ahead of the execs to come: it then does the TCP
connection, the proxy's ``CONNECT`` and the TLS handshake on its own and waits, in the ``idle`` stage,
until an exec takes it (:meth:`Connection.take`: the upgrade request goes out at once) or its time is up
(:meth:`Connection.expire`: closed politely). A connection that fails or is closed by the server before an
exec took it is only marked dead (the dialer drops it): no exec sees its error.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp

from wizard.cluster.gateway.wsframes import (
    FrameReader,
    HandshakeRefused,
    ProtocolViolation,
    ProxyRefused,
    http_head,
)

if TYPE_CHECKING:
    from wizard.cluster.gateway.websocket import Dialer

SESSION_RENEWAL_S = 300.0
"""How long one TLS session is offered before a newer one replaces it (at most half its lifetime)."""
_READ = 256 * 1024
SERVER_CLOSE_WAIT_S = 5.0
REFUSAL_BODY_MAX = 64 * 1024
"""The most of a refused upgrade's body kept (its Status says why; the rest is not read)."""
"""How long after the close handshake the server may take to close the TCP connection before the client does."""


@dataclass(frozen=True)
class Upgrade:
    """One exec's upgrade request and the ``Sec-WebSocket-Accept`` its answer must carry."""

    request: bytes = field(repr=False)  # it carries the credential header: never in a traceback's locals
    accept: str


class Connection(asyncio.Protocol):
    """One exec's connection (see the module's text); ``done`` is its outcome once an exec took it."""

    def __init__(self, dialer: Dialer, loop: asyncio.AbstractEventLoop) -> None:
        self.dialer = dialer
        self.loop = loop
        self.upgrade: Upgrade | None = None
        """The exec's upgrade request: None while the connection waits for an exec."""
        self.frames: FrameReader | None = None
        self.done: asyncio.Future[bool] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.stage = "proxy" if dialer.proxy else "tls"
        self.buffer = bytearray()
        self.tls: ssl.SSLObject | None = None
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.dead = False
        """Failed or closed before an exec took it: never to be taken."""
        self.dialling: asyncio.Task[None] | None = None
        """The dial of a connection made ahead (held here: the loop keeps only a weak reference to a task)."""
        self.timer: asyncio.TimerHandle | None = None
        """Ahead of an exec: its expiry. After the close handshakes: the cut-off if the server does not close."""
        self.refusal: tuple[int, dict[str, str]] = (0, {})
        """A refused upgrade's status and headers, while its body is read (stage ``refused``)."""

    def take(self, upgrade: Upgrade, on_message: Callable[[bytes], None]) -> None:
        """An exec takes this connection: its upgrade request goes out as soon as TLS is up (now, if it is)."""
        self.upgrade = upgrade
        self.frames = FrameReader(on_message)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.stage == "idle":
            self.stage = "upgrade"
            self._send(upgrade.request)

    def expire(self) -> None:
        """Dialled ahead and not taken in time: closed (TLS's close_notify first, as a client should)."""
        self.timer = None
        if self.upgrade is not None:
            return
        self.dead = True
        self.dialer.forget(self)
        if self.transport is None:  # still connecting
            if self.dialling is not None:
                self.dialling.cancel()
            return
        if self.tls is not None and self.stage == "idle":
            with contextlib.suppress(ssl.SSLError):  # it waits for the server's close_notify: not here
                self.tls.unwrap()
            self._flush()
        self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        try:
            if self.stage == "proxy":
                transport.write(self.dialer.connect_request)
            else:
                self._secure()
        except Exception as exc:  # e.g. a server name TLS cannot use: this exec fails with it
            self.fail(exc)

    def _secure(self) -> None:
        """Start TLS (or, for ``http://``, the upgrade at once)."""
        dialer = self.dialer
        if dialer.tls is None:
            self._ready()
            return
        self.stage = "tls"
        self.tls = dialer.tls.wrap_bio(
            self.incoming, self.outgoing, server_hostname=dialer.server_name, session=dialer.session
        )
        self._handshake()

    def _handshake(self) -> bool:
        assert self.tls is not None
        try:
            self.tls.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return False
        if self.tls.session_reused:
            self.dialer.resumed += 1
        self._ready()
        return True

    def _ready(self) -> None:
        """The server is reached (TLS up, if any): the upgrade goes out now, or once an exec takes it."""
        self.dialer.reachable = True
        if self.upgrade is None:
            self.stage = "idle"
            self._flush()  # TLS's last flight (the client's Finished) goes now, not with the request
            return
        self.stage = "upgrade"
        self._send(self.upgrade.request)

    def _send(self, data: bytes) -> None:
        if self.tls is not None:
            self.tls.write(data)
            self._flush()
        elif self.transport is not None:
            self.transport.write(data)

    def _flush(self) -> None:
        pending = self.outgoing.read()
        if pending and self.transport is not None:
            self.transport.write(pending)

    def data_received(self, data: bytes) -> None:
        try:
            if self.stage == "proxy":
                self._tunnel(data)
            elif self.tls is None:
                self._plain(data)
            else:
                self._decrypt(data)
        except Exception as exc:  # any failure ends this exec with it (never the loop's exception handler)
            self.fail(exc)

    def _tunnel(self, data: bytes) -> None:
        self.buffer += data
        answer = http_head(self.buffer)
        if answer is None:
            return
        if answer[0] != 200:
            raise ProxyRefused(answer[0])
        self.buffer.clear()
        self._secure()

    def _decrypt(self, data: bytes) -> None:
        assert self.tls is not None
        self.incoming.write(data)
        if self.stage == "tls" and not self._handshake():
            return
        while True:
            try:
                chunk = self.tls.read(_READ)
            except ssl.SSLWantReadError:  # e.g. a TLS 1.3 session ticket read while the connection waits
                break
            except ssl.SSLZeroReturnError:  # the server's close_notify (CPython reads it as b"" mostly)
                chunk = b""
            if not chunk:  # the server's close_notify: what follows is the connection's end
                self._answer_close_notify()
                break
            self._plain(chunk)
        self._flush()  # reading may have produced TLS records to send (a key update's answer)

    def _answer_close_notify(self) -> None:
        """Send ours back: a server waits for it before it closes the TCP connection (asyncio's does, up to
        its shutdown timeout), and the close is the server's to make (see :meth:`_plain`)."""
        assert self.tls is not None
        # No answer possible (a broken connection): the server's timeout or our abort ends it.
        with contextlib.suppress(ssl.SSLError):
            self.tls.unwrap()

    def _plain(self, data: bytes) -> None:
        if self.stage == "idle":
            raise ProtocolViolation("the server sent data before any request")
        if self.stage == "refused":
            self.buffer += data
            self._refusal_read()
            return
        if self.stage == "upgrade":
            self.buffer += data
            answer = http_head(self.buffer)
            if answer is None:
                return
            if answer[0] != 101:  # the reason is in the body that follows: read it before failing
                self.stage, self.refusal = "refused", answer
                self._refusal_read()
                return
            self._upgraded(*answer)
            data, self.buffer = bytes(self.buffer), bytearray()
        assert self.frames is not None
        reply = self.frames.feed(data)
        if reply:
            self._send(reply)
        if self.frames.closed and not self.done.done():
            self._keep_session()
            self.done.set_result(True)
            # The server closes the TCP connection first (RFC 6455 7.1.1), so the TIME_WAIT is the
            # server's: thousands of execs whose client closed first left as many TIME_WAITs here, and
            # each new connect() searched past them for a free port (connect 10x dearer at 3,000 nodes).
            # A server that does not close is cut off after a while.
            if self.transport is not None:
                self.timer = self.loop.call_later(SERVER_CLOSE_WAIT_S, self.abort)

    def _refusal_read(self, ended: bool = False) -> None:
        """A refused upgrade: fail with its status, headers and body once the body is in (its
        Content-Length, bounded; a chunked or unsized body is not waited for) or the connection ended."""
        status, headers = self.refusal
        try:
            size = min(int(headers.get("content-length", "")), REFUSAL_BODY_MAX)
        except ValueError:
            size = 0
        if ended or len(self.buffer) >= size:
            raise HandshakeRefused(status, headers, bytes(self.buffer[:size]))

    def _upgraded(self, status: int, headers: dict[str, str]) -> None:
        assert self.upgrade is not None
        if headers.get("upgrade", "").lower() != "websocket" or "upgrade" not in headers.get("connection", "").lower():
            raise ProtocolViolation("the server answered 101 without upgrading to a websocket")
        if headers.get("sec-websocket-accept") != self.upgrade.accept:
            raise ProtocolViolation("the server's Sec-WebSocket-Accept does not match the request's key")
        agreed = headers.get("sec-websocket-protocol", "")
        if agreed != self.dialer.protocol:  # without it the frames carry no exit status to read
            raise ProtocolViolation(
                f"the server agreed to exec protocol {agreed or 'none'!r}, not {self.dialer.protocol}"
            )
        self.stage = "frames"

    def _keep_session(self) -> None:
        """Offer this connection's TLS session to the next ones (a TLS 1.3 ticket arrives after the handshake).

        Reading a session out of OpenSSL costs about a third of a full handshake, so the one kept is read
        again only when it was not resumed (the server no longer takes it) or is due for renewal."""
        if self.tls is None:
            return
        dialer = self.dialer
        if self.tls.session_reused and time.monotonic() < dialer.session_renewal:
            return
        session = self.tls.session
        if session is not None and session.has_ticket:
            dialer.session = session
            dialer.session_renewal = time.monotonic() + min(session.timeout / 2, SESSION_RENEWAL_S)

    def fail(self, exc: BaseException) -> None:
        """The connection failed: the exec that took it ends with ``exc``; one made ahead is dropped."""
        if self.upgrade is None:
            if self.stage in ("proxy", "tls"):  # the server was not reached: no more dialling ahead for now
                self.dialer.reachable = False
            self.dead = True
            self.dialer.forget(self)
        elif not self.done.done():
            self.done.set_exception(exc)
        self.abort()

    def abort(self) -> None:
        """Cut the connection off (a dial still under way is stopped: no request may go out after this)."""
        if self.dialling is not None:
            self.dialling.cancel()
            self.dialling = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:  # the server closed: the timer (and what it holds) goes at once
            self.timer.cancel()
            self.timer = None
        if self.upgrade is None:  # closed while it waited for an exec: dropped, no exec saw it
            self.dead = True
            self.dialer.forget(self)
            return
        if self.done.done():
            return
        if self.stage == "frames":
            self._keep_session()
            self.done.set_result(False)  # no close frame: whether the command finished is the caller's to say
        elif self.stage == "refused":
            try:
                self._refusal_read(ended=True)
            except HandshakeRefused as refused:
                self.done.set_exception(refused)
        else:
            self.done.set_exception(aiohttp.ServerDisconnectedError())
