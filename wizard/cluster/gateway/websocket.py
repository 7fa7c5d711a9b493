"""A lean websocket client for the exec API: one connection per exec, TLS driven in memory, RFC 6455 frames.

Every exec is a connection of its own (the exec protocol shares none), so the client CPU of a
verification of thousands of nodes is mostly what one connection costs. This client keeps that to
the protocol's own work: one :class:`~wizard.cluster.gateway.wsconnection.Connection` per exec does the
TCP connection, an HTTP ``CONNECT`` when the kubeconfig (or the environment) names a proxy, the TLS
handshake through an :class:`ssl.SSLObject` over memory buffers, the HTTP/1.1 Upgrade request (written by
hand, its fixed headers built once per gateway) with the ``Sec-WebSocket-Accept`` check, and reads the
server's frames (binary and text messages, fragmented ones, close, ping answered by a masked pong). It
uses the TLS context the Kubernetes client configured (CA, client certificate and key, verification on or
off) and the cluster's ``tls-server-name``; and because it drives the TLS object itself, it can hand the
server's session ticket from one exec to the next: a resumed handshake costs a fraction of a full one, on
both sides (the server's certificate is neither signed for nor verified again). A server that declines
resumption gets a full handshake; nothing else changes.

While several execs run at once (a verification's), the :class:`Dialer` dials a few connections ahead of
the execs to come: their TCP connection and TLS handshake (two round trips, and the handshake's CPU on
both sides) happen while other execs wait for their commands, and the next exec sends its upgrade request
at once. A connection dialled ahead and not taken within :data:`AHEAD_TTL_S` is closed; one exec at a time
dials for itself only.
"""

from __future__ import annotations

import asyncio
import base64
import collections
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

from wizard.cluster.gateway.wsconnection import Connection, Upgrade
from wizard.cluster.transport import ConnectFailed, shown_proxy

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
RESOLVE_TTL_S = 10.0
"""How long a host name's addresses are reused (thousands of execs would otherwise resolve it each)."""
HAPPY_EYEBALLS_S = 0.25
"""RFC 8305's connection attempt delay: the next address is tried when the first has not answered by then."""
DIAL_AHEAD = 4
"""Connections kept dialled ahead while execs overlap (at most one fewer than the execs running): enough
for 16 execs of 50 ms each, whose connections take 5-15 ms to set up on a loaded machine."""
AHEAD_TTL_S = 2.0
"""How long a connection dialled ahead waits for an exec before it is closed (an API server keeps a
connection with no request open for far longer: k8s.io/apiserver's secure serving waits 32 s for a request's header)."""


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
        self.ahead = DIAL_AHEAD
        """At most this many connections dialled ahead (0: none)."""
        self.taken_ahead = 0
        """Execs that went over a connection dialled ahead (for tests and benchmarks)."""
        self.reachable = False
        """The last connection reached the server: only then are connections dialled ahead."""
        self._ahead: collections.deque[Connection] = collections.deque()
        self._running = 0
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
        self.connect_request = b""
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
            self.connect_request = f"CONNECT {authority} HTTP/1.1\r\n{lines}\r\n".encode("latin-1")

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
        upgrade = self.upgrade(target, headers)
        self._running += 1
        connection = self._take_ahead()
        closed_cleanly = False
        try:
            if connection is not None:
                connection.take(upgrade, on_message)
                self.taken_ahead += 1
                self._dial_ahead(loop)
            else:
                connection = Connection(self, loop)
                connection.take(upgrade, on_message)
                self._dial_ahead(loop)
                await self._open(loop, connection)
            closed_cleanly = await connection.done
            return closed_cleanly
        finally:
            self._running -= 1
            if not closed_cleanly and connection is not None:  # a clean close leaves the TCP close to the server
                connection.abort()

    def _take_ahead(self) -> Connection | None:
        """The oldest connection dialled ahead that is still good (TLS up, or on its way)."""
        while self._ahead:
            connection = self._ahead.popleft()
            if not connection.dead:
                return connection
        return None

    def _dial_ahead(self, loop: asyncio.AbstractEventLoop) -> None:
        """Dial connections for the execs to come while others run (one fewer than are running, at most
        :attr:`ahead`): a lone exec leaves no connection behind, a verification's finds one ready."""
        if not self.reachable:  # the server refused or did not answer: each exec finds out for itself
            return
        wanted = min(self.ahead, self._running - 1)
        while len(self._ahead) < wanted:
            connection = Connection(self, loop)
            connection.timer = loop.call_later(AHEAD_TTL_S, connection.expire)
            connection.dialling = loop.create_task(self._dial(loop, connection))
            self._ahead.append(connection)

    async def _dial(self, loop: asyncio.AbstractEventLoop, connection: Connection) -> None:
        try:
            await self._open(loop, connection)
        except Exception as exc:  # the exec that took it meanwhile ends with the error; otherwise it is dropped
            connection.dialling = None
            connection.fail(exc)
        else:
            connection.dialling = None

    def forget(self, connection: Connection) -> None:
        """A connection dialled ahead failed, was closed or expired: not to be taken."""
        with contextlib.suppress(ValueError):
            self._ahead.remove(connection)

    def close(self) -> None:
        """Close the connections dialled ahead and dial no more (the gateway closes)."""
        self.ahead = 0
        while self._ahead:
            self._ahead.popleft().expire()

    async def _open(self, loop: asyncio.AbstractEventLoop, connection: Connection) -> None:
        host, port = self.proxy or (self.host, self.port)
        try:
            await self._connect(loop, connection, host, port)
        except ConnectFailed:
            self.reachable = False
            raise

    async def _connect(self, loop: asyncio.AbstractEventLoop, connection: Connection, host: str, port: int) -> None:
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
