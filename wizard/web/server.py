"""The classroom server: one link with a token, a cookie, an Origin check, a session cap, a wizard per tab.

``GET /?token=T`` with this start's random token sets an HttpOnly cookie and redirects to ``/``
(the token leaves the address bar); ``/`` without the cookie is a 403 page, and a full pool is a 503
page. ``/ws`` needs the cookie *and* an ``Origin`` equal to the public URL's (a page from another site
open in the same browser cannot start sessions), then runs one :class:`~wizard.web.sessions.Session`
and relays between the browser's terminal and the app until either side closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import secrets
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

from wizard.web import pages, protocol
from wizard.web.environment import make_root, remove_stale_roots, session_command
from wizard.web.sessions import Session, SessionPool, SessionStartError

log = logging.getLogger(__name__)

COOKIE = "gpu-wizard-classroom"
"""The session cookie: HttpOnly, SameSite=Lax, Secure behind https."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

MAX_TERMINAL = 500
"""Columns or rows a browser may ask for (the app draws every cell: this bounds the work)."""


class ServeError(Exception):
    """The server cannot start (port taken, bad address); one line for the user."""


@dataclass(frozen=True)
class ServeOptions:
    """What ``gpu-wizard serve`` was asked for."""

    scenario: str
    host: str = "127.0.0.1"
    port: int = 8000
    public_url: str | None = None
    max_sessions: int = 1
    spares: int = 0


def is_loopback(host: str) -> bool:
    """A host name or address that only this machine reaches."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, the way a browser writes its ``Origin`` header."""
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


class Classroom:
    """The aiohttp application: pages, static files and the session websocket."""

    def __init__(self, pool: SessionPool, token: str, public_url: str, *, loopback_aliases: bool) -> None:
        self.pool = pool
        self.token = token
        self.public_url = public_url.rstrip("/") + "/"
        self.secure = self.public_url.startswith("https://")
        origin = origin_of(self.public_url)
        self.origins = {origin}
        if loopback_aliases:  # the default URL: the same server under any loopback name
            port = urlsplit(self.public_url).port
            self.origins |= {f"http://{name}:{port}" for name in LOOPBACK_NAMES}
        self.path = urlsplit(self.public_url).path or "/"
        websocket_scheme = "wss" if self.secure else "ws"
        self.websocket_url = websocket_scheme + self.public_url[self.public_url.index(":") :] + "ws"
        self.static = self.path + "static/"

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._headers])
        static = Path(str(resources.files("textual_serve") / "static"))
        app.add_routes(
            [
                web.get("/", self.index),
                web.get("/ws", self.websocket),
                web.get("/status", self.status),
                web.static("/static", static, show_index=False, follow_symlinks=False),
            ]
        )
        return app

    @web.middleware
    async def _headers(self, request: web.Request, handler: Callable[..., object]) -> web.StreamResponse:
        try:
            response = await handler(request)  # type: ignore[misc]
        except web.HTTPException as exc:  # a refusal: the same headers as any page
            response = web.Response(status=exc.status, text=exc.text, headers=exc.headers)
        assert isinstance(response, web.StreamResponse)
        if not response.prepared:
            ws_origin = self.websocket_url.rsplit("/", 1)[0]
            response.headers.setdefault(
                "Content-Security-Policy",
                f"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                f"font-src 'self'; connect-src 'self' {ws_origin}; frame-ancestors 'none'; base-uri 'none'; "
                "form-action 'none'",
            )
            response.headers.setdefault("Referrer-Policy", "no-referrer")
            response.headers.setdefault("X-Content-Type-Options", "nosniff")
            response.headers.setdefault("X-Frame-Options", "DENY")
            if not request.path.startswith("/static/"):
                response.headers.setdefault("Cache-Control", "no-store")
        return response

    def authorized(self, request: web.Request) -> bool:
        """The request carries this start's cookie."""
        return hmac.compare_digest(request.cookies.get(COOKIE, ""), self.token)

    def _html(self, text: str, status: int = 200) -> web.Response:
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")

    async def index(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("token")
        if token is not None:
            if not hmac.compare_digest(token, self.token):
                return self._html(pages.forbidden_page(self.static), 403)
            response = web.Response(status=303, headers={"Location": self.path})
            response.set_cookie(COOKIE, self.token, path=self.path, httponly=True, samesite="Lax", secure=self.secure)
            return response
        if not self.authorized(request):
            return self._html(pages.forbidden_page(self.static), 403)
        if self.pool.full:
            return self._html(pages.full_page(self.pool.limit, self.static), 503)
        font_size = _bounded(request.query.get("fontsize", ""), 16, 8, 40)
        page = pages.wizard_page(static=self.static, websocket=self.websocket_url, home=self.path, font_size=font_size)
        return self._html(page)

    async def status(self, request: web.Request) -> web.StreamResponse:
        """For the trainer (with the cookie): sessions in use, spares ready and starting, the limit."""
        if not self.authorized(request):
            raise web.HTTPForbidden(text="open the link with ?token=… first\n")
        return web.json_response(self.pool.counts())

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        if not self.authorized(request):
            raise web.HTTPForbidden(text="open the link with ?token=… first\n")
        if request.headers.get("Origin", "") not in self.origins:
            log.warning("refused a websocket from origin %r", request.headers.get("Origin", "(none)"))
            raise web.HTTPForbidden(text="this page's origin may not open sessions here\n")
        session = self.pool.reserve()
        if session is None:
            raise web.HTTPServiceUnavailable(text=f"all {self.pool.limit} sessions are in use\n")
        websocket = web.WebSocketResponse(heartbeat=20, max_msg_size=64 * 1024)
        try:
            await websocket.prepare(request)
            width = _bounded(request.query.get("width", ""), 80, 10, MAX_TERMINAL)
            height = _bounded(request.query.get("height", ""), 24, 5, MAX_TERMINAL)
            if session.started:  # a spare: what it drew is queued; the resize repaints it at the tab's size
                await session.until_started()
                await session.send(protocol.meta({"type": "resize", "width": width, "height": height}))
            else:
                await session.start(width, height)
            relay = asyncio.create_task(self._relay_output(session, websocket))
            try:
                await self._relay_input(session, websocket)
            finally:
                relay.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await relay
        except SessionStartError as exc:
            log.error("a session did not start: %s", exc)
        finally:
            await self.pool.release(session)
            await websocket.close()
        return websocket

    async def _relay_output(self, session: Session, websocket: web.WebSocketResponse) -> None:
        """App → browser: terminal output as binary frames; the app's exit closes the socket."""
        while (packet := await session.read()) is not None:
            if packet.kind == "D":
                if websocket.closed:
                    return
                await websocket.send_bytes(packet.payload)
            elif packet.kind == "M" and packet.meta().get("type") == "exit":
                break
            # P (file deliveries) and other metas: not offered in classroom mode
        await websocket.close()

    async def _relay_input(self, session: Session, websocket: web.WebSocketResponse) -> None:
        """Browser → app: keystrokes, size, focus; returns when the browser closes."""
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
                sent = await session.send(protocol.keystrokes(argument))
            elif kind == "resize" and isinstance(argument, dict):
                width = _bounded(argument.get("width"), 80, 10, MAX_TERMINAL)
                height = _bounded(argument.get("height"), 24, 5, MAX_TERMINAL)
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


def _bounded(value: object, default: int, low: int, high: int) -> int:
    try:
        number = int(str(value))
    except ValueError:
        return default
    return min(max(number, low), high)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound before the app is built: the URL needs the port, and port 0 picks one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as exc:
        raise ServeError(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def serve(options: ServeOptions, announce: Callable[[str], None]) -> None:
    """Run until SIGINT or SIGTERM; ``announce`` gets the URL to share once the port is open."""
    listener = listen(options.host, options.port)
    for stale in remove_stale_roots():
        log.info("removed %s, left by a server that was killed", stale)
    token = secrets.token_urlsafe(24)
    pool = SessionPool(session_command(options.scenario), options.max_sessions, make_root(), spares=options.spares)
    public_url = options.public_url
    if public_url is None:
        host = f"[{options.host}]" if ":" in options.host else options.host
        public_url = f"http://{host}:{listener.getsockname()[1]}/"
    classroom = Classroom(pool, token, public_url, loopback_aliases=options.public_url is None)
    runner = web.AppRunner(classroom.application(), handle_signals=False, access_log=None, shutdown_timeout=5)
    try:
        await runner.setup()
        await web.SockSite(runner, listener).start()
        announce(classroom.public_url + "?token=" + token)
        pool.warm()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await pool.close()  # every app asked to quit, lingering groups killed, folders removed
        await runner.cleanup()
        listener.close()
