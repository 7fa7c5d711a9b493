"""The classroom server: one link with a token, cookies, an Origin check, a session cap, a wizard per browser.

``GET /?token=T`` with this start's random token sets two HttpOnly cookies — the token, and a random
seat that names this browser — and redirects to ``/`` (the token leaves the address bar;
``?fontsize=`` stays). ``/`` without the token cookie is a 403 page, and a full pool a 503 page.
``/ws`` needs the cookies *and* an ``Origin`` equal to the public URL's (a page from another site
open in the same browser cannot start sessions), then attaches the browser to its seat's session
(:mod:`wizard.web.seats`) and relays its input (:mod:`wizard.web.relay`) until it closes. ``/status``
is the trainer's: it needs the status key printed on the console, not the students' cookie. With a
``--public-url`` that has a path, every route answers under that path too (with or without a proxy
that strips it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from wizard import sealed
from wizard.bundled import assets
from wizard.demo.scenarios.scenario import OFFERED_VARIABLE, ScenarioError, load_scenario
from wizard.web import pages, refusals
from wizard.web.environment import make_root, remove_stale_roots, session_command
from wizard.web.pool import SessionPool
from wizard.web.relay import MAX_MESSAGE, MAX_TERMINAL, bounded, relay_input
from wizard.web.seats import CLOSE_REASONS, FAILED, Seats
from wizard.web.sessions import SessionStartError

log = logging.getLogger(__name__)

COOKIE = "gpu-wizard-classroom"
"""The access cookie (this start's token): HttpOnly, SameSite=Lax, Secure behind https."""

SEAT_COOKIE = "gpu-wizard-seat"
"""The browser's seat (random, HttpOnly): its session survives a reload or a closed tab."""

_SEAT = re.compile(r"[A-Za-z0-9_-]{32}")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

DEFAULT_FONT_SIZE = 16
"""The terminal's font size in CSS pixels unless ``?fontsize=`` says otherwise (narrow screens fit 80 columns)."""


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
    grace: float = 300.0
    per_client: int = 0
    scenarios: tuple[str, ...] = ()
    """The scenarios a student may switch to in a session (empty: only ``scenario``)."""


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


def same_secret(given: str, expected: str) -> bool:
    """``given`` is ``expected``, compared in constant time (any text, non-ASCII too, is just wrong)."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


class Classroom:
    """The aiohttp application: pages, static files, the trainer's status and the session websocket."""

    def __init__(
        self,
        pool: SessionPool,
        token: str,
        public_url: str,
        *,
        loopback_aliases: bool,
        grace: float = 300.0,
        per_client: int = 0,
        status_key: str | None = None,
    ) -> None:
        self.pool = pool
        self.seats = Seats(pool, grace=grace, per_client=per_client)
        self.token = token
        self.status_key = status_key or secrets.token_urlsafe(24)
        self.public_url = public_url.rstrip("/") + "/"
        self.secure = self.public_url.startswith("https://")
        origin = origin_of(self.public_url)
        self.origins = {origin}
        if loopback_aliases:  # the default URL: the same server under any loopback name
            port = urlsplit(self.public_url).port
            self.origins |= {f"http://{name}:{port}" for name in LOOPBACK_NAMES}
        self.forwarded = not loopback_aliases
        """A public URL was given: a proxy on this machine names the client in ``X-Forwarded-For``."""
        self.path = urlsplit(self.public_url).path or "/"
        websocket_scheme = "wss" if self.secure else "ws"
        self.websocket_url = websocket_scheme + self.public_url[self.public_url.index(":") :] + "ws"
        self.static = self.path + "static/"

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._headers])
        textual_static = Path(str(resources.files("textual_serve") / "static"))
        own_static = Path(str(assets() / "web"))
        for prefix in sorted({"/", self.path}):  # under the public path, and at / behind a proxy that strips it
            app.add_routes(
                [
                    web.get(prefix, self.index),
                    web.get(prefix + "ws", self.websocket),
                    web.get(prefix + "status", self.status),
                    web.static(prefix + "static/classroom", own_static, show_index=False, follow_symlinks=False),
                    web.static(prefix + "static", textual_static, show_index=False, follow_symlinks=False),
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
            if "/static/" not in request.path:
                response.headers.setdefault("Cache-Control", "no-store")
        return response

    def authorized(self, request: web.Request) -> bool:
        """The request carries this start's cookie."""
        return same_secret(request.cookies.get(COOKIE, ""), self.token)

    def seat_of(self, request: web.Request) -> str | None:
        """The browser's seat from its cookie (None when it has none, or not one this server makes)."""
        seat = request.cookies.get(SEAT_COOKIE, "")
        return seat if _SEAT.fullmatch(seat) else None

    def client_address(self, request: web.Request) -> str:
        """Who is asking: the peer, or behind a proxy on this machine the client it names last."""
        peer = request.remote or ""
        forwarded = request.headers.get("X-Forwarded-For", "")
        if self.forwarded and forwarded and is_loopback(peer):
            return forwarded.rsplit(",", 1)[-1].strip()[:64]
        return peer

    def _html(self, text: str, status: int = 200) -> web.Response:
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")

    def _set_cookie(self, response: web.StreamResponse, name: str, value: str) -> None:
        response.set_cookie(name, value, path=self.path, httponly=True, samesite="Lax", secure=self.secure)

    async def index(self, request: web.Request) -> web.StreamResponse:
        token = request.query.get("token")
        font_size = request.query.get("fontsize")
        if token is not None:
            if not same_secret(token, self.token):
                refusals.refused(403, "a link with a wrong token", self.client_address(request))
                return self._html(pages.forbidden_page(self.static), 403)
            kept = "?" + urlencode({"fontsize": font_size}) if font_size else ""
            response = web.Response(status=303, headers={"Location": self.path + kept})
            self._set_cookie(response, COOKIE, self.token)
            if self.seat_of(request) is None:
                self._set_cookie(response, SEAT_COOKIE, secrets.token_urlsafe(24))
            return response
        if not self.authorized(request):
            refusals.refused(403, "the page without the classroom's cookie", self.client_address(request))
            return self._html(pages.forbidden_page(self.static), 403)
        seat = self.seat_of(request)
        if self.pool.full and (seat is None or self.seats.get(seat) is None):
            return self._html(pages.full_page(self.pool.limit, self.static), 503)
        page = pages.wizard_page(
            static=self.static,
            websocket=self.websocket_url,
            home=self.path + ("?" + urlencode({"fontsize": font_size}) if font_size else ""),
            font_size=bounded(font_size, DEFAULT_FONT_SIZE, 6, 40),
            fit=font_size is None,
            grace=int(self.seats.grace),
        )
        response = self._html(page)
        if seat is None:
            self._set_cookie(response, SEAT_COOKIE, secrets.token_urlsafe(24))
        return response

    async def status(self, request: web.Request) -> web.StreamResponse:
        """For the trainer (the status key from the console): sessions in use, spares ready and starting."""
        if not same_secret(request.query.get("key", ""), self.status_key):
            refusals.refused(403, "the status page without its key", self.client_address(request))
            raise web.HTTPForbidden(text="the status page needs the key printed on the trainer's console\n")
        return web.json_response(self.pool.counts())

    async def websocket(self, request: web.Request) -> web.StreamResponse:
        seat_id = self.seat_of(request)
        if not self.authorized(request) or seat_id is None:
            refusals.refused(403, "a session without the classroom's cookie", self.client_address(request))
            raise web.HTTPForbidden(text="open the link with ?token=… first\n")
        if request.headers.get("Origin", "") not in self.origins:
            origin = request.headers.get("Origin", "(none)")[:100].encode("ascii", "backslashreplace").decode()
            refusals.refused(403, f"a session from origin {origin!r}", self.client_address(request))
            raise web.HTTPForbidden(text="this page's origin may not open sessions here\n")
        websocket = web.WebSocketResponse(heartbeat=20, max_msg_size=MAX_MESSAGE)
        await websocket.prepare(request)
        seat = self.seats.get(seat_id) or self.seats.open(seat_id, self.client_address(request))
        if isinstance(seat, int):  # refused: the page says why
            await websocket.close(code=seat, message=CLOSE_REASONS[seat])
            return websocket
        width = bounded(request.query.get("width", ""), 80, 10, MAX_TERMINAL)
        height = bounded(request.query.get("height", ""), 24, 5, MAX_TERMINAL)
        try:
            await self.seats.attach(seat, websocket, width, height)
            await relay_input(seat.session, websocket, seat.gate)
        except SessionStartError as exc:
            log.error("a session did not start: %s", exc)
            await self.seats.end(seat, FAILED)
        except ConnectionError:
            pass
        finally:
            self.seats.detach(seat, websocket)
            await websocket.close()
        return websocket


def scenario_files(scenario: str) -> list[str]:
    """The trainer's files a sealed session reads for ``scenario``: its file and its ``nodelist:`` ([] when bundled)."""
    path = Path(scenario)
    if not path.is_absolute():
        return []
    files = [str(path)]
    with contextlib.suppress(ScenarioError):  # (checked before the server starts)
        nodelist = load_scenario(scenario).nodelist
        if nodelist:
            files.append(str((path.parent / nodelist).expanduser().resolve()))
    return files


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound before the app is built: the URL needs the port, and port 0 picks one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host.strip("[]"), port), family=family, backlog=128)
    except OSError as exc:
        raise ServeError(f"--host/--port: cannot listen on {host}:{port}: {exc.strerror or exc}") from None


async def serve(
    options: ServeOptions, announce: Callable[[str, str, str], None], ready: Callable[[int, float], None]
) -> None:
    """Run until SIGINT or SIGTERM.

    ``announce`` gets the link to share, the trainer's status URL and the address this server listens on
    (``http://HOST:PORT/``, the port that ``--port 0`` picked: where a reverse proxy points) once the port is open; ``ready``
    the spares ready and the seconds they took, once nothing warms any more (the class can start).
    """
    listener = listen(options.host, options.port)
    refusals.install()
    for stale in remove_stale_roots():
        log.info("removed %s, left by a server that was killed", stale)
    token = secrets.token_urlsafe(24)
    command = session_command(options.scenario)
    offered = {OFFERED_VARIABLE: ",".join(dict.fromkeys((options.scenario, *options.scenarios)))}
    if reads := scenario_files(options.scenario):  # the trainer's own files: the only ones outside it a session reads
        offered[sealed.READS_VARIABLE] = os.pathsep.join(reads)
    pool = SessionPool(
        command, options.max_sessions, make_root(), spares=options.spares, environment=offered, on_ready=ready
    )
    host = f"[{options.host}]" if ":" in options.host else options.host
    local_url = f"http://{host}:{listener.getsockname()[1]}/"
    public_url = options.public_url or local_url
    classroom = Classroom(
        pool,
        token,
        public_url,
        loopback_aliases=options.public_url is None,
        grace=options.grace,
        per_client=options.per_client,
    )
    runner = web.AppRunner(classroom.application(), handle_signals=False, access_log=None, shutdown_timeout=1)
    try:
        await runner.setup()
        await web.SockSite(runner, listener).start()
        announce(
            classroom.public_url + "?token=" + token,
            classroom.public_url + "status?key=" + classroom.status_key,
            local_url,
        )
        pool.warm()
        police = asyncio.get_running_loop().create_task(classroom.seats.police())  # (each session's budget)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            await stop.wait()
        finally:
            police.cancel()
    finally:
        pool.stopping()  # every app asked to quit, lingering groups killed, folders removed: all at once
        await asyncio.gather(classroom.seats.close(), pool.close(), return_exceptions=True)
        await runner.cleanup()
        listener.close()
