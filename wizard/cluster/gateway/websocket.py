"""A lean websocket client for the exec API: one connection per exec, TLS driven in memory, RFC 6455 frames.

Every exec is a connection of its own (the exec protocol shares none), so the client CPU of a
verification of thousands of nodes is mostly what one connection costs. This client keeps that to
the protocol's own work: one :class:`asyncio.Protocol` per exec does the TCP connection, an HTTP
``CONNECT`` when the kubeconfig (or the environment) names a proxy, the TLS handshake through an
:class:`ssl.SSLObject` over memory buffers, the HTTP/1.1 Upgrade request (written by hand, its fixed
headers built once per gateway) with the ``Sec-WebSocket-Accept`` check, and reads the server's frames
(binary and text messages, fragmented ones, close, ping answered by a masked pong). It uses the TLS
context the Kubernetes client configured (CA, client certificate and key, verification on or off) and
the cluster's ``tls-server-name``; and because it drives the TLS object itself, it can hand the server's
session ticket from one exec to the next: a resumed handshake costs a fraction of a full one, on both
sides (the server's certificate is neither signed for nor verified again). A server that declines
resumption gets a full handshake; nothing else changes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hashlib
import ipaddress
import os
import socket
import ssl
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from wizard.cluster.gateway.wsframes import (
    FrameReader,
    HandshakeRefused,
    ProtocolViolation,
    ProxyRefused,
    http_head,
)
from wizard.cluster.transport import ConnectFailed, shown_proxy

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
RESOLVE_TTL_S = 10.0
HAPPY_EYEBALLS_S = 0.25
"""RFC 8305's connection attempt delay: the next address is tried when the first has not answered by then."""
"""How long a host name's addresses are reused (thousands of execs would otherwise resolve it each)."""
SESSION_RENEWAL_S = 300.0
"""How long one TLS session is offered before a newer one replaces it (at most half its lifetime)."""
_READ = 256 * 1024
SERVER_CLOSE_WAIT_S = 5.0
"""How long after the close handshake the server may take to close the TCP connection before the client does."""


@dataclass(frozen=True)
class Upgrade:
    """One exec's upgrade request and the ``Sec-WebSocket-Accept`` its answer must carry."""

    request: bytes = field(repr=False)  # it carries the credential header: never in a traceback's locals
    accept: str


class Dialer:
    """Websockets to one API server (through its proxy, if any); the TLS session is carried from one to the next.

    ``server`` is the API server's URL (``https://host:port[/prefix]``), ``tls`` the client's TLS context
    (None for ``http://``), ``server_name`` the name its certificate is checked against (the kubeconfig's
    ``tls-server-name``, else the host), ``proxy`` an ``http://[user:password@]host:port`` URL or "",
    ``headers`` what every upgrade request carries besides the websocket's own (User-Agent, cookie…).
    """

    def __init__(
        self,
        server: str,
        tls: ssl.SSLContext | None,
        *,
        server_name: str = "",
        proxy: str = "",
        proxy_headers: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
        protocol: str,
    ) -> None:
        parts = urllib.parse.urlsplit(server)
        secure = parts.scheme in ("https", "wss")
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if secure else 80)
        self.tls = tls if secure else None
        self.server_name = server_name or self.host
        self.prefix = parts.path.rstrip("/")
        self.protocol = protocol
        """The exec subprotocol asked for; the server must agree to it."""
        self.session: ssl.SSLSession | None = None
        """The last TLS session the server gave a ticket for (offered to the next handshake)."""
        self.session_renewal = 0.0
        """When the kept session is to be replaced by a fresh one (monotonic clock)."""
        self.resumed = 0
        """Handshakes that resumed a session (for tests and benchmarks)."""
        self._addresses: tuple[float, list[tuple[str, int]]] = (0.0, [])
        netloc = parts.netloc.rpartition("@")[2]
        fixed = {
            "Host": netloc,
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Protocol": protocol,
            **(headers or {}),
        }
        self._fixed = _header_lines(fixed)
        self.proxy: tuple[str, int] | None = None
        self._connect = b""
        if proxy:
            via = urllib.parse.urlsplit(proxy)
            if via.scheme != "http" or not via.hostname:
                raise ValueError(f"proxy {shown_proxy(proxy)}: only http:// proxies (HTTP CONNECT) carry execs")
            self.proxy = (via.hostname, via.port or 80)
            extra = dict(proxy_headers or {})
            if via.username is not None:
                user = urllib.parse.unquote(via.username)
                password = urllib.parse.unquote(via.password or "")
                credentials = base64.b64encode(f"{user}:{password}".encode()).decode()
                extra.setdefault("Proxy-Authorization", f"Basic {credentials}")
            authority = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
            lines = _header_lines({"Host": authority, **extra})
            self._connect = f"CONNECT {authority} HTTP/1.1\r\n{lines}\r\n".encode("latin-1")

    def upgrade(self, target: str, headers: dict[str, str]) -> Upgrade:
        """The upgrade request for ``target`` (path and query, under the server's path prefix) with a fresh key."""
        key = base64.b64encode(os.urandom(16)).decode()
        accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID, usedforsecurity=False).digest()).decode()
        text = f"GET {self.prefix}{target} HTTP/1.1\r\n{self._fixed}{_header_lines(headers)}Sec-WebSocket-Key: {key}\r\n\r\n"
        return Upgrade(text.encode("latin-1"), accept)

    async def run(self, target: str, headers: dict[str, str], on_message: Callable[[bytes], None]) -> bool:
        """One websocket: every message to ``on_message`` until the server closes it. True when it closed
        with a close frame, False when the connection ended without one (dropped)."""
        loop = asyncio.get_running_loop()
        connection = _Connection(self, self.upgrade(target, headers), on_message, loop)
        host, port = self.proxy or (self.host, self.port)
        closed_cleanly = False
        try:
            await self._open(loop, connection, host, port)
            closed_cleanly = await connection.done
            return closed_cleanly
        finally:
            if not closed_cleanly:  # a clean close leaves the TCP close to the server (see _plain)
                connection.abort()

    async def _open(self, loop: asyncio.AbstractEventLoop, connection: _Connection, host: str, port: int) -> None:
        addresses = await self._resolve(loop, host, port)
        if len(addresses) > 1:
            # Several addresses (an AAAA record beside the A one): raced as RFC 8305 says, so one that does
            # not answer costs a quarter second once, not every exec's whole timeout; the one that
            # answered serves the next execs until the name is resolved again.
            try:
                transport, _ = await loop.create_connection(
                    lambda: connection, host, port, happy_eyeballs_delay=HAPPY_EYEBALLS_S
                )
            except OSError as exc:
                raise ConnectFailed(exc) from None
            peer = transport.get_extra_info("peername")
            if peer:
                self._addresses = (self._addresses[0], [(str(peer[0]), int(peer[1]))])
            return
        error: OSError | None = None
        for address in addresses:
            try:
                await loop.create_connection(lambda: connection, address[0], address[1])
                return
            except OSError as exc:
                error = exc
        raise ConnectFailed(error or OSError(f"no address for {host}"))

    async def _resolve(self, loop: asyncio.AbstractEventLoop, host: str, port: int) -> list[tuple[str, int]]:
        if _ip_literal(host):
            return [(host, port)]
        when, addresses = self._addresses
        if addresses and time.monotonic() - when < RESOLVE_TTL_S:
            return addresses
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ConnectFailed(exc) from None
        addresses = list(dict.fromkeys((str(info[4][0]), int(info[4][1])) for info in infos))
        self._addresses = (time.monotonic(), addresses)
        return addresses


@functools.lru_cache(maxsize=8)
def _ip_literal(host: str) -> bool:
    """Whether ``host`` is an IP address, not a name (asked once per exec, for one or two hosts)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _header_lines(headers: dict[str, str]) -> str:
    for name, value in headers.items():
        if any(c in f"{name}{value}" for c in "\r\n\0"):
            raise ValueError(f"header {name!r}: a line break in its name or value")
    return "".join(f"{name}: {value}\r\n" for name, value in headers.items())


class _Connection(asyncio.Protocol):
    """One exec's connection: proxy tunnel, TLS in memory, upgrade, then frames (see the module's text)."""

    def __init__(
        self, dialer: Dialer, upgrade: Upgrade, on_message: Callable[[bytes], None], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.dialer = dialer
        self.upgrade = upgrade
        self.done: asyncio.Future[bool] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.stage = "proxy" if dialer.proxy else "tls"
        self.buffer = bytearray()
        self.tls: ssl.SSLObject | None = None
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.frames = FrameReader(on_message)
        self._close_timer: asyncio.TimerHandle | None = None
        """Cuts the connection off if the server does not close it after the close handshakes."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        try:
            if self.stage == "proxy":
                transport.write(self.dialer._connect)
            else:
                self._secure()
        except Exception as exc:  # e.g. a server name TLS cannot use: this exec fails with it
            self._fail(exc)

    def _secure(self) -> None:
        """Start TLS (or, for ``http://``, the upgrade at once)."""
        dialer = self.dialer
        if dialer.tls is None:
            self.stage = "upgrade"
            self._send(self.upgrade.request)
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
        self.stage = "upgrade"
        self._send(self.upgrade.request)
        return True

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
            self._fail(exc)

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
            except ssl.SSLWantReadError:
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
        if self.stage == "upgrade":
            self.buffer += data
            answer = http_head(self.buffer)
            if answer is None:
                return
            self._upgraded(*answer)
            data, self.buffer = bytes(self.buffer), bytearray()
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
                self._close_timer = asyncio.get_running_loop().call_later(SERVER_CLOSE_WAIT_S, self.abort)

    def _upgraded(self, status: int, headers: dict[str, str]) -> None:
        if status != 101:
            raise HandshakeRefused(status)
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

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        self.abort()

    def abort(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._close_timer is not None:  # the server closed: the timer (and what it holds) goes at once
            self._close_timer.cancel()
            self._close_timer = None
        if self.done.done():
            return
        if self.stage == "frames":
            self._keep_session()
            self.done.set_result(False)  # no close frame: whether the command finished is the caller's to say
        else:
            self.done.set_exception(aiohttp.ServerDisconnectedError())
