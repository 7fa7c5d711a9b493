"""The classroom's places: at most ``limit`` sessions, with spares started ahead at a low priority.

A spare is a session whose app has started, drawn its first frame and run its demo cluster's
preflight before any tab asked: the next tab takes it at once instead of waiting for a cold start
(about 2.5 CPU-seconds, which N students arriving together share). Spares start at most one per
core at a time, only while there is room (never more than ``limit`` minus the sessions in use), and
each is given to one tab only. The server announces once when the first spares are ready
(``on_ready``), so the trainer knows when the class can start.

A student who comes before that takes the spare furthest along, else one not started yet (started
at once for the tab, at full priority). Spares started once the class
has started (the announcement, or a first student) run at :data:`~wizard.web.sessions.SPARE_NICE`
(where Linux can give the priority back: :func:`~wizard.web.sessions.set_group_niceness`): they take what
the students' sessions leave of the cores, not a share of it, and the tab that takes one gives it
full priority again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path

from wizard.web.sessions import (
    MAX_SPARE_BACKLOG,
    PREFLIGHT_READY_TIMEOUT,
    QUIT_GRACE,
    STOP_QUIT_GRACE,
    STOP_TERM_GRACE,
    TERM_GRACE,
    Session,
    SessionStartError,
)

log = logging.getLogger(__name__)


class SessionPool:
    """At most ``limit`` sessions at once, all under one root folder, with up to ``spares`` started ahead."""

    def __init__(
        self,
        command: Sequence[str],
        limit: int,
        root: Path,
        *,
        spares: int = 0,
        environment: Mapping[str, str] | None = None,
        on_ready: Callable[[int, float], None] | None = None,
    ) -> None:
        self.command = list(command)
        self.environment = dict(environment or {})
        """What every session's process gets besides its own environment (the scenarios offered)."""
        self.limit = limit
        self.root = root
        self.spares = spares
        self.on_ready = on_ready
        """Called once, with the spares ready and the seconds since :meth:`warm` first ran."""
        self.sessions: set[Session] = set()
        """Sessions given to a tab (attached to one, or kept for its browser's return)."""
        self.ready: list[Session] = []
        """Started spares waiting for a tab."""
        self._tasks: set[asyncio.Task[None]] = set()
        """Spares starting and sessions stopping in the background."""
        self.starting: list[Session] = []
        """Spares being started (a tab that finds no ready spare takes one of these before a cold start)."""
        self._every: set[Session] = set()
        """Every session made and not yet stopped: what a server stop must end, whatever state it is in."""
        self._warm_slots = asyncio.Semaphore(max(1, (os.cpu_count() or 1)))
        self._closed = False
        self._warm_since: float | None = None
        self._announced = False
        self._graces = (QUIT_GRACE, TERM_GRACE)
        """How long a stopping session may take to quit, then to end on SIGTERM (shorter once the server stops)."""

    @property
    def full(self) -> bool:
        """No room for another session."""
        return len(self.sessions) >= self.limit

    def counts(self) -> dict[str, int]:
        """Sessions in use, spares ready and spares starting, and the limit."""
        return {
            "sessions": len(self.sessions),
            "ready": len(self.ready),
            "warming": len(self.starting),
            "limit": self.limit,
        }

    def reserve(self) -> Session | None:
        """A session holding a place (a started spare when one is ready), or None when the pool is full.

        The caller starts it (:meth:`Session.start`) unless it has started already.
        """
        if self.full:
            return None
        session = self._take_spare() or self._new()
        self.sessions.add(session)
        self.warm()
        return session

    def _take_spare(self) -> Session | None:
        spare = self._soonest_spare()
        if spare is not None:
            spare.promote()  # a student's session now: full priority
        return spare

    def _soonest_spare(self) -> Session | None:
        while self.ready:
            spare = self.ready.pop(0)
            if spare.running and spare.backlog <= MAX_SPARE_BACKLOG:
                return spare
            self._spawn(self._stop(spare))  # ended or drew too much while waiting: not worth a tab
        for running in (True, False):  # the furthest along first (in the order they started)
            for spare in self.starting:
                if spare.running == running:
                    self.starting.remove(spare)
                    return spare
        return None

    def _new(self) -> Session:
        session = Session(self.root, self.command, self.environment)
        self._every.add(session)
        return session

    def stopping(self) -> None:
        """The server stops: from now on every session gets the short graces, so that all end within seconds."""
        self._graces = (STOP_QUIT_GRACE, STOP_TERM_GRACE)

    async def _stop(self, session: Session) -> None:
        try:
            await session.stop(*self._graces)
        finally:
            self._every.discard(session)

    async def release(self, session: Session) -> None:
        """End the session and free its place."""
        try:
            await self._stop(session)
        finally:
            self.sessions.discard(session)
            self.warm()

    def warm(self) -> None:
        """Start spares until there are as many as wanted (and there is room for them)."""
        if self._warm_since is None:
            self._warm_since = time.monotonic()
        wanted = min(self.spares, self.limit - len(self.sessions))
        for _ in range(wanted - len(self.ready) - len(self.starting)):
            spare = self._new()
            self.starting.append(spare)
            self._spawn(self._start_spare(spare))
        self._announce_once()

    def _announce_once(self) -> None:
        """Tell the trainer once that nothing is warming any more: the class can start."""
        if self._announced or self.starting or self._warm_since is None:
            return
        self._announced = True
        if self.on_ready is not None:
            self.on_ready(len(self.ready), time.monotonic() - self._warm_since)

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        if self._closed:
            work.close()
            return
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _start_spare(self, spare: Session) -> None:
        try:
            await self._warm_up(spare)
        finally:
            if spare in self.starting:
                self.starting.remove(spare)
            self._announce_once()

    async def _warm_up(self, spare: Session) -> None:
        try:
            async with self._warm_slots:
                if spare.started or spare in self.sessions:  # a tab took it while it waited: the tab starts it
                    return
                refill = self._announced or bool(self.sessions)  # the class has started: gently
                await spare.start(80, 24, background=refill)
                if spare not in self.sessions:
                    await spare.settle(PREFLIGHT_READY_TIMEOUT)
        except SessionStartError as exc:
            if spare not in self.sessions:  # (a tab that took it sees the error itself)
                log.error("a spare session did not start: %s", exc)
                await self._stop(spare)
            return
        if spare in self.sessions:
            return  # a tab took it while it started
        if self._closed:
            await self._stop(spare)
        else:
            self.starting.remove(spare)
            self.ready.append(spare)

    async def close(self) -> None:
        """End every session and spare (server stop), then remove the root folder."""
        self._closed = True
        self.stopping()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.ready.clear()
        await asyncio.gather(*(self._stop(s) for s in list(self._every)), return_exceptions=True)
        self.sessions.clear()
        shutil.rmtree(self.root, ignore_errors=True)
