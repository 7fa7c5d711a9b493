"""Seats: one session per browser, kept for a grace period when its tab closes or reloads.

The link gives each browser a random seat cookie (HttpOnly) besides the classroom's token. A session
belongs to the seat that started it: a reload, or the link opened again in the same browser,
attaches to it again — the screen is repainted, the apply it was running goes on — and an older tab
of the same seat is told the session moved. When its tab goes, the session keeps running for
``grace`` seconds before it ends and frees its place. New seats are counted per client address:
at most ``per_client`` sessions each, so one client with the link cannot take the whole class.

The browser's page learns why its socket closed from the close code (:data:`CLOSE_REASONS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from wizard.web import protocol
from wizard.web.budget import CHECK_EVERY_S, Budget, resident_bytes
from wizard.web.pool import SessionPool
from wizard.web.relay import Gate
from wizard.web.sessions import Session

log = logging.getLogger(__name__)

REATTACH_S = 5.0
"""Seconds a session outlives its closed tab whatever the grace: the same browser's next connection finds it."""

NEW_SEAT_WINDOW_S = 60.0
"""The window in which one client address may open at most ``per_client`` new seats."""

MAX_ADDRESSES = 10000
"""Client addresses remembered for the new-seat limit before those with no recent seat are forgotten."""

ENDED, MOVED, FAILED, OVER_BUDGET, TOO_MANY, FULL = 4000, 4001, 4002, 4008, 4429, 4503
CLOSE_REASONS = {
    ENDED: b"the session ended",
    OVER_BUDGET: b"the session used more than its share of the server",
    MOVED: b"this session is open in another tab",
    FAILED: b"the session did not start",
    TOO_MANY: b"too many sessions from this address",
    FULL: b"the classroom is full",
}
"""Websocket close codes the page turns into its own notice (``wizard/web/static/classroom.js``)."""


@dataclass(eq=False)
class Seat:
    """One browser's session, the tab attached to it (if any) and the timer that ends it when none is."""

    id: str
    address: str
    session: Session
    socket: web.WebSocketResponse | None = None
    gate: Gate = field(default_factory=Gate)
    """Input events admitted for this session, whichever tab sends them."""
    pump: asyncio.Task[None] | None = None
    expiry: asyncio.TimerHandle | None = None
    sending: asyncio.Lock = field(default_factory=asyncio.Lock)
    budget: Budget = field(default_factory=Budget)
    """Its session's use of the server's CPU and memory (:meth:`Seats.police`)."""


class Seats:
    """Every seat with a session: attach, detach, and end after the grace period."""

    def __init__(
        self, pool: SessionPool, *, grace: float, per_client: int, budget: Callable[[], Budget] = Budget
    ) -> None:
        self.pool = pool
        self.budget = budget
        """Makes each new seat's :class:`~wizard.web.budget.Budget`."""
        self.grace = grace
        self.per_client = per_client
        """Sessions one client address may hold (0: no limit)."""
        self._seats: dict[str, Seat] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._opened: dict[str, list[float]] = {}
        """Per client address: when it opened its latest new seats (within :data:`NEW_SEAT_WINDOW_S`)."""

    def get(self, seat_id: str) -> Seat | None:
        return self._seats.get(seat_id)

    def held_by(self, address: str) -> int:
        """Sessions held by seats of this client address."""
        return sum(1 for seat in self._seats.values() if seat.address == address)

    def open(self, seat_id: str, address: str) -> Seat | int:
        """A new seat with a session holding a place, or the close code that refuses it."""
        if self.per_client:
            now = time.monotonic()
            recent = [t for t in self._opened.get(address, []) if now - t < NEW_SEAT_WINDOW_S]
            self._opened[address] = recent
            if self.held_by(address) >= self.per_client or len(recent) >= self.per_client:
                return TOO_MANY
            if len(self._opened) > MAX_ADDRESSES:  # (forget addresses with no recent seat)
                self._opened = {a: ts for a, ts in self._opened.items() if ts and now - ts[-1] < NEW_SEAT_WINDOW_S}
            recent.append(now)
        session = self.pool.reserve()
        if session is None:
            return FULL
        seat = self._seats[seat_id] = Seat(seat_id, address, session, budget=self.budget())
        return seat

    def police_once(self) -> list[Seat]:
        """End every seat whose session is past its budget (with a line on the console); returns them."""
        now = time.monotonic()
        ended = []
        for seat in list(self._seats.values()):
            pid = seat.session.pid
            if pid is None or not seat.session.running:
                continue
            why = seat.budget.over(now, seat.session.cpu_seconds(), resident_bytes(pid))
            if why:
                log.warning("ended the session of %s: it used %s", seat.address[:64], why)
                ended.append(seat)
                task = asyncio.get_running_loop().create_task(self.end(seat, OVER_BUDGET))
                self._ending.add(task)
                task.add_done_callback(self._ending.discard)
        return ended

    async def police(self) -> None:
        """:meth:`police_once` every :data:`~wizard.web.budget.CHECK_EVERY_S` seconds, until cancelled."""
        while True:
            await asyncio.sleep(CHECK_EVERY_S)
            self.police_once()

    async def attach(self, seat: Seat, socket: web.WebSocketResponse, width: int, height: int) -> None:
        """Make ``socket`` the seat's tab: the app repaints everything on it at its size."""
        await seat.session.start(width, height)  # a cold start; for a spare or a return, waits if needed
        if self._seats.get(seat.id) is not seat:  # ended meanwhile (server stop)
            raise ConnectionError("the seat was closed")
        if seat.expiry is not None:
            seat.expiry.cancel()
            seat.expiry = None
        async with seat.sending:
            previous, seat.socket = seat.socket, socket
            seat.session.discard_output()
            await socket.send_bytes(protocol.replay_modes(seat.session.modes))
        if previous is not None and not previous.closed:
            await previous.close(code=MOVED, message=CLOSE_REASONS[MOVED])
        await seat.session.send(protocol.meta({"type": "resize", "width": width, "height": height}))
        await seat.session.send(protocol.meta({"type": "repaint"}))
        if seat.pump is None:
            seat.pump = asyncio.get_running_loop().create_task(self._pump(seat))

    def detach(self, seat: Seat, socket: web.WebSocketResponse) -> None:
        """The tab went: the session runs on for the grace period (unless another tab has it already)."""
        if seat.socket is not socket:
            return
        seat.socket = None
        if self._seats.get(seat.id) is not seat:
            return
        if not seat.session.running:
            self._end_soon(seat)
            return
        seat.expiry = asyncio.get_running_loop().call_later(max(self.grace, REATTACH_S), self._end_soon, seat)

    def _end_soon(self, seat: Seat) -> None:
        task = asyncio.get_running_loop().create_task(self.end(seat))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def end(self, seat: Seat, code: int = ENDED) -> None:
        """End the seat's session and free its place."""
        if self._seats.get(seat.id) is not seat:
            return
        del self._seats[seat.id]
        if seat.expiry is not None:
            seat.expiry.cancel()
        if seat.pump is not None and seat.pump is not asyncio.current_task():
            seat.pump.cancel()
        socket, seat.socket = seat.socket, None
        if socket is not None and not socket.closed:
            with contextlib.suppress(ConnectionError):
                await socket.close(code=code, message=CLOSE_REASONS.get(code, b""))
        await self.pool.release(seat.session)

    async def _pump(self, seat: Seat) -> None:
        """App → the attached tab, for the session's whole life; output with no tab attached is dropped."""
        try:
            while (packet := await seat.session.read()) is not None:
                if packet.kind == "D":
                    async with seat.sending:
                        socket = seat.socket
                        if socket is not None and not socket.closed:
                            with contextlib.suppress(ConnectionError):
                                await socket.send_bytes(packet.payload)
                elif packet.kind == "M" and packet.meta().get("type") == "exit":
                    break
                # P (file deliveries) and other metas: not offered in classroom mode
        finally:
            if self._seats.get(seat.id) is seat:
                self._end_soon(seat)

    async def close(self) -> None:
        """Server stop: close every tab and end every seat."""
        seats = list(self._seats.values())
        await asyncio.gather(*(self.end(seat, 1001) for seat in seats), return_exceptions=True)
        await asyncio.gather(*self._ending, return_exceptions=True)
