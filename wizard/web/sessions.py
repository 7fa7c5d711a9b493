"""One wizard process per browser tab: clean environment, own folders, own process group, ended for sure.

A :class:`Session` runs ``python -m wizard --demo SCENARIO --web`` with the environment and the
folders :mod:`wizard.web.environment` gives it; its folder is removed when the session ends. The process
leads its own session and process group, so ending it ends everything it started
(:class:`~wizard.web.pool.SessionPool` holds them and ends them all when the server stops); if the
server is killed instead, each app sees its stdin close and quits (``screens.webdriver``), and the
next server start removes the folders the killed one left (:func:`~wizard.web.environment.remove_stale_roots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from wizard.web import protocol
from wizard.web.environment import SESSION_FOLDERS, session_environment

log = logging.getLogger(__name__)

QUIT_GRACE = 3.0
"""Seconds an app gets to quit by itself (stop its demo cluster) before its group is terminated."""

TERM_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL to the session's process group."""

STOP_QUIT_GRACE, STOP_TERM_GRACE = 1.5, 1.0
"""The same two graces when the server stops: every session ends within ~3 s of Ctrl-C (all at once)."""

FIRST_FRAME_BYTES = 1024
"""Output after which an app has drawn its first frame (the terminal set-up before it is ~100 bytes)."""

AFTER_FIRST_FRAME_NICE = 5
"""Niceness of a session once it has drawn (see :meth:`Session._yield_to_newcomers`)."""

SPARE_NICE = 10
"""Niceness of a spare that refills the pool once the class has started (:mod:`wizard.web.pool`).

A nice-0 session weighs ~9 times a nice-10 one: the students' sessions (niceness 0, then 5) get the
cores first, and a refill takes what they leave. The tab that takes it gives it back full priority
(:meth:`Session.promote`): possible only with Linux's autogroups (:func:`set_group_niceness`), so
only there are spares started at this niceness. The students' sessions keep their group at 0: the
class does not yield to the rest of the machine."""

AUTOGROUP_SWITCH = Path("/proc/sys/kernel/sched_autogroup_enabled")

MAX_SPARE_BACKLOG = 4 * 1024 * 1024
"""Bytes a spare may draw while it waits for a tab (about 35 KB up to its preflight, ~0 when idle)."""

SPARE_SETTLE_S = 1.0
"""A spare counts as warmed once it has been idle for this long (its preflight is done)."""

IDLE_CPU_S = 0.03
"""CPU seconds an idle app may use in :data:`SPARE_SETTLE_S` (a settled wizard uses ~0)."""

PREFLIGHT_READY_TIMEOUT = 120.0
"""Seconds a spare may take to settle before it is offered as it is."""


class SessionStartError(Exception):
    """The session's app did not start (its stderr tail says why)."""


class Session:
    """One browser tab's wizard process and its folders.

    Once started, one task reads the app's packets into a queue for as long as it runs: a warm spare
    (started before any tab asked for it) keeps what it drew there, and the tab that takes it gets
    that backlog first, then a resize that repaints everything at the tab's size.
    """

    def __init__(self, root: Path, command: Sequence[str], environment: Mapping[str, str] | None = None) -> None:
        self.id = secrets.token_hex(6)
        self.folder = root / f"session-{self.id}"
        self.command = list(command)
        self.environment = dict(environment or {})
        """Added to the environment :func:`~wizard.web.environment.session_environment` builds (the trainer's settings)."""
        self.process: asyncio.subprocess.Process | None = None
        self.backlog = 0
        """Bytes queued and not yet read (a spare's drawing while it waits for a tab)."""
        self._packets: asyncio.Queue[protocol.Packet | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._last_output = 0.0
        self._start_called = False
        self._start_done = asyncio.Event()
        self._start_error: SessionStartError | None = None
        self.background = False
        """A spare running at :data:`SPARE_NICE` until a tab takes it (:meth:`promote`)."""
        self.modes: dict[str, str] = {}
        """The terminal modes the app has set (``?1049`` → ``h``): replayed to a tab that attaches later."""

    @property
    def pid(self) -> int | None:
        """The app's pid, which is also its process group's id."""
        return self.process.pid if self.process is not None else None

    @property
    def started(self) -> bool:
        """Its start was asked for (by the pool, for a spare): :meth:`until_started` waits for it to finish."""
        return self._start_called

    async def until_started(self) -> None:
        """Wait for a start already under way; SessionStartError if it failed."""
        await self._start_done.wait()
        if self._start_error is not None:
            raise self._start_error

    @property
    def running(self) -> bool:
        """Its app has started and not ended."""
        return self.process is not None and self.process.returncode is None

    async def start(self, width: int, height: int, *, background: bool = False) -> None:
        """Make the folders and start the app; returns once it is ready to draw (SessionStartError if not).

        ``background``: a spare that refills the pool, started at :data:`SPARE_NICE`. Only the first call starts anything
        (a tab and the pool may both try a spare that had not started yet): later calls wait for it.
        """
        if self._start_called:
            await self.until_started()
            return
        self._start_called = True
        try:
            await self._start(width, height, background)
        except SessionStartError as exc:
            self._start_error = exc
            raise
        except OSError as exc:
            self._start_error = SessionStartError(f"cannot start the app: {exc}")
            raise self._start_error from None
        finally:
            self._start_done.set()

    async def _start(self, width: int, height: int, background: bool) -> None:
        self.folder.mkdir(mode=0o700)
        for name in SESSION_FOLDERS:
            (self.folder / name).mkdir(mode=0o700)
        with open(self.folder / "stderr.log", "wb") as stderr:
            self.process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=self.folder / "home",
                env=session_environment(self.folder, width=width, height=height) | self.environment,
                start_new_session=True,  # its own session and process group: ended as one
                limit=protocol.MAX_PACKET + 5,
            )
        if background and autogroups():  # (a niceness that a tab can take back)
            self.background = set_group_niceness(self.process.pid, SPARE_NICE)
        assert self.process.stdout is not None
        try:
            await protocol.wait_until_ready(self.process.stdout)
        except protocol.ProtocolError as exc:
            raise SessionStartError(f"{exc}: {self.stderr_tail()}") from None
        self._reader = asyncio.create_task(self._read_all(self.process.stdout))

    async def _read_all(self, stdout: asyncio.StreamReader) -> None:
        drawn = 0
        try:
            while (packet := await protocol.read_packet(stdout)) is not None:
                if drawn < FIRST_FRAME_BYTES <= drawn + len(packet.payload):
                    self._yield_to_newcomers()
                drawn += len(packet.payload)
                if packet.kind == "D":
                    protocol.track_modes(packet.payload, self.modes)
                self.backlog += len(packet.payload)
                self._last_output = time.monotonic()
                self._packets.put_nowait(packet)
        except protocol.ProtocolError as exc:
            log.error("session %s: %s", self.id, exc)
        finally:
            self._packets.put_nowait(None)

    def _yield_to_newcomers(self) -> None:
        """After its first frame, the app's group runs at a lower priority than apps still drawing theirs.

        Students who open the link together then each see a frame soon, instead of every start-up
        sharing the cores until all of them are done; sessions past their first frame stay equal.
        The process group's own niceness: with Linux's autogroups it weighs only within the session
        (no effect between students), and the group's is left at 0 so the class never yields to
        the rest of the machine (:func:`set_group_niceness`).
        """
        if self.process is None:
            return
        with contextlib.suppress(OSError):  # (within the session's own group where Linux has autogroups)
            if os.getpriority(os.PRIO_PROCESS, self.process.pid) < AFTER_FIRST_FRAME_NICE:
                os.setpriority(os.PRIO_PGRP, self.process.pid, AFTER_FIRST_FRAME_NICE)

    def promote(self) -> None:
        """A tab took this spare: it runs as any student's session from now on, at full priority."""
        if self.background and self.process is not None:
            self.background = False
            set_group_niceness(self.process.pid, 0)

    async def settle(self, timeout: float) -> None:
        """Wait until the app is idle: it has drawn, and used almost no CPU for :data:`SPARE_SETTLE_S`.

        Idle CPU, not a quiet screen: under load a start-up can draw nothing for seconds while it
        imports, but it keeps using CPU until its demo cluster and preflight are done (then ~0).
        """
        deadline = time.monotonic() + timeout
        history: list[tuple[float, float]] = []
        while self.running and time.monotonic() < deadline:
            now, used = time.monotonic(), self.cpu_seconds()
            history.append((now, used))
            window = [(t, c) for t, c in history if now - t <= SPARE_SETTLE_S + 0.01]
            spanned = now - window[0][0] >= SPARE_SETTLE_S
            if self._last_output and spanned and used - window[0][1] <= IDLE_CPU_S:
                return
            await asyncio.sleep(0.25)

    def cpu_seconds(self) -> float:
        """CPU time the app has used (Linux /proc; elsewhere 0, and a spare settles on a quiet screen)."""
        if self.process is None:
            return 0.0
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return 0.0
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stderr_tail(self, lines: int = 5) -> str:
        """The last lines the app wrote on stderr (for the server's log)."""
        try:
            text = (self.folder / "stderr.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    async def read(self) -> protocol.Packet | None:
        """The app's next packet (None once it has ended)."""
        if self._reader is None:
            return None
        packet = await self._packets.get()
        if packet is None:
            self._packets.put_nowait(None)  # every later read ends too
        else:
            self.backlog -= len(packet.payload)
        return packet

    def discard_output(self) -> None:
        """Drop what the app drew and nobody read (a tab that attaches asks for a full repaint instead)."""
        while not self._packets.empty():
            packet = self._packets.get_nowait()
            if packet is None:
                self._packets.put_nowait(None)
                return
            self.backlog -= len(packet.payload)

    async def send(self, packet: bytes) -> bool:
        """Write a packet to the app's stdin; False once the app is gone."""
        stdin = self.process.stdin if self.process is not None else None
        if stdin is None or stdin.is_closing():
            return False
        try:
            stdin.write(packet)
            await stdin.drain()
        except (ConnectionError, RuntimeError):
            return False
        return True

    async def stop(self, quit_grace: float = QUIT_GRACE, term_grace: float = TERM_GRACE) -> None:
        """Ask the app to quit, end its process group if it lingers, and remove the session's folder."""
        process = self.process
        if process is not None:
            if process.returncode is None:
                await self.send(protocol.meta({"type": "quit"}))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), quit_grace)
            if process.returncode is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), term_grace)
                except TimeoutError:
                    _signal_group(process.pid, signal.SIGKILL)
                    await process.wait()
            _signal_group(process.pid, signal.SIGKILL)  # anything the app started and left behind
            if process.stdin is not None:
                process.stdin.close()
        if self._reader is not None:
            self._reader.cancel()
        shutil.rmtree(self.folder, ignore_errors=True)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def autogroups() -> bool:
    """Linux schedules each session as a group (``kernel.sched_autogroup_enabled``, the usual default)."""
    try:
        return AUTOGROUP_SWITCH.read_text().strip() == "1"
    except OSError:
        return False


def set_group_niceness(pid: int, niceness: int) -> bool:
    """Give the scheduling group of the session led by ``pid`` this niceness (0 or more); True if done.

    Each session process leads its own session, and with autogroups the scheduler weighs sessions
    against each other (and against everything else on the machine) by their group's niceness
    (``/proc/PID/autogroup``), which its owner may raise and lower again down to 0. A process's own
    niceness only weighs within its session.
    """
    if not autogroups():
        return False
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(niceness), encoding="ascii")
    except OSError:
        return False
    return True
