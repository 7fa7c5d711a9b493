"""One wizard process per browser tab: clean environment, own folders, own process group, ended for sure.

A :class:`Session` runs ``python -m wizard --demo SCENARIO --web`` with an environment built from
nothing (no KUBECONFIG, no registry, cloud or proxy credentials: only PATH and the locale pass
through) and HOME, XDG config/state/cache/data folders, TMPDIR and the working folder all inside
its own folder, which is removed when the session ends. The process leads its own session and
process group, so ending it ends everything it started. :class:`SessionPool` holds at most
``limit`` sessions and ends them all when the server stops; if the server is killed instead, each
app sees its stdin close and quits (``screens.webdriver``), and the next server start removes the
folders the killed one left (:func:`remove_stale_roots`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from wizard.web import protocol

log = logging.getLogger(__name__)

PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""The only variables of the server's environment a session sees: none can carry a credential."""

APP_DRIVER = "screens.webdriver:ClassroomWebDriver"
"""Textual's web driver, plus: the app quits when its connection to the server closes."""

ROOT_PREFIX = "gpu-wizard-classroom-"
"""Name prefix of a server's folder under the system's temporary folder."""

OWNER_FILE = "server.pid"
"""In a server's folder: the pid of the server that made it (a folder whose server is gone is stale)."""

QUIT_GRACE = 3.0
"""Seconds an app gets to quit by itself (stop its demo cluster) before its group is terminated."""

TERM_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL to the session's process group."""


def session_command(scenario: str) -> list[str]:
    """The wizard in web mode on the demo cluster ``scenario``, run by this Python."""
    return [sys.executable, "-m", "wizard", "--demo", scenario, "--web"]


def session_environment(folder: Path, *, width: int, height: int) -> dict[str, str]:
    """The whole environment of a session's process: built from nothing, every writable place in ``folder``."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(folder / "home"),
        XDG_CONFIG_HOME=str(folder / "config"),
        XDG_STATE_HOME=str(folder / "state"),
        XDG_CACHE_HOME=str(folder / "cache"),
        XDG_DATA_HOME=str(folder / "data"),
        TMPDIR=str(folder / "tmp"),
        PYTHONDONTWRITEBYTECODE="1",
        TEXTUAL_DRIVER=APP_DRIVER,
        TEXTUAL_COLOR_SYSTEM="truecolor",
        TERM_PROGRAM="gpu-wizard-serve",
        COLUMNS=str(width),
        ROWS=str(height),
    )
    return env


SESSION_FOLDERS = ("home", "config", "state", "cache", "data", "tmp", "work")


def make_root() -> Path:
    """This server's private folder (0700) under the system's temporary folder, marked with its pid."""
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
    (root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
    return root


def remove_stale_roots(parent: Path | None = None) -> list[Path]:
    """Remove the folders of servers that are gone (killed before they could clean up); returns them."""
    parent = parent or Path(tempfile.gettempdir())
    removed: list[Path] = []
    for root in parent.glob(ROOT_PREFIX + "*"):
        try:
            pid = int((root / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue  # not ours, or still being made
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SessionStartError(Exception):
    """The session's app did not start (its stderr tail says why)."""


class Session:
    """One browser tab's wizard process and its folders."""

    def __init__(self, root: Path, command: Sequence[str]) -> None:
        self.id = secrets.token_hex(6)
        self.folder = root / f"session-{self.id}"
        self.command = list(command)
        self.process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        """The app's pid, which is also its process group's id."""
        return self.process.pid if self.process is not None else None

    async def start(self, width: int, height: int) -> None:
        """Make the folders and start the app; returns once it is ready to draw (SessionStartError if not)."""
        self.folder.mkdir(mode=0o700)
        for name in SESSION_FOLDERS:
            (self.folder / name).mkdir(mode=0o700)
        with open(self.folder / "stderr.log", "wb") as stderr:
            self.process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=self.folder / "work",
                env=session_environment(self.folder, width=width, height=height),
                start_new_session=True,  # its own session and process group: ended as one
                limit=protocol.MAX_PACKET + 5,
            )
        assert self.process.stdout is not None
        try:
            await protocol.wait_until_ready(self.process.stdout)
        except protocol.ProtocolError as exc:
            raise SessionStartError(f"{exc}: {self.stderr_tail()}") from None

    def stderr_tail(self, lines: int = 5) -> str:
        """The last lines the app wrote on stderr (for the server's log)."""
        try:
            text = (self.folder / "stderr.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    async def read(self) -> protocol.Packet | None:
        """The app's next packet (None once it has ended)."""
        if self.process is None or self.process.stdout is None:
            return None
        return await protocol.read_packet(self.process.stdout)

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

    async def stop(self) -> None:
        """Ask the app to quit, end its process group if it lingers, and remove the session's folder."""
        process = self.process
        if process is not None:
            if process.returncode is None:
                await self.send(protocol.meta({"type": "quit"}))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), QUIT_GRACE)
            if process.returncode is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), TERM_GRACE)
                except TimeoutError:
                    _signal_group(process.pid, signal.SIGKILL)
                    await process.wait()
            _signal_group(process.pid, signal.SIGKILL)  # anything the app started and left behind
            if process.stdin is not None:
                process.stdin.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


class SessionPool:
    """At most ``limit`` sessions at once, all under one root folder."""

    def __init__(self, command: Sequence[str], limit: int, root: Path) -> None:
        self.command = list(command)
        self.limit = limit
        self.root = root
        self.sessions: set[Session] = set()

    @property
    def full(self) -> bool:
        """No room for another session."""
        return len(self.sessions) >= self.limit

    def reserve(self) -> Session | None:
        """A new (not yet started) session holding a place, or None when the pool is full."""
        if self.full:
            return None
        session = Session(self.root, self.command)
        self.sessions.add(session)
        return session

    async def release(self, session: Session) -> None:
        """End the session and free its place."""
        try:
            await session.stop()
        finally:
            self.sessions.discard(session)

    async def close(self) -> None:
        """End every session (server stop), then remove the root folder."""
        await asyncio.gather(*(self.release(s) for s in list(self.sessions)), return_exceptions=True)
        shutil.rmtree(self.root, ignore_errors=True)
