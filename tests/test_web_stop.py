"""The banner names the port a reverse proxy points at, and a stop ends every session within 5 s.

With ``--public-url`` the link names the proxy's address, so the banner also names where this server
listens (with ``--port 0``, the port it picked); a websocket from that local address is refused (its
Origin is not the public URL's), so students must use the link. Ctrl-C (SIGINT) or SIGTERM ends every
session, tab-held or spare, mid-preflight or idle, within :data:`STOP_S` seconds.
"""

from __future__ import annotations

import asyncio
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from benchmarks.web import PREFLIGHT_DONE, ServedWizard, Tab, alive
from wizard.web.pool import SessionPool

pytestmark = pytest.mark.timeout(240)

STOP_S = 5.0


async def test_with_a_public_url_and_port_0_the_banner_names_the_local_port() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0", "--public-url", "https://class.example/") as served:
        assert served.link.startswith("https://class.example/?token=")
        match = re.search(r"listening: http://127\.0\.0\.1:(\d+)/", served.banner)
        assert match, served.banner
        port = int(match.group(1))
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # the port it named is this server
        writer.write(b"GET /static/classroom/classroom.js HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        await writer.drain()
        assert (await asyncio.wait_for(reader.read(), 10)).startswith(b"HTTP/1.1 200")
        writer.close()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_a_stop_ends_every_session_within_5_seconds(signum: int) -> None:
    with ServedWizard("--max-sessions", "4", "--spares", "2") as served:
        tabs = [Tab(served), Tab(served)]
        for tab in tabs:
            await tab.open()
        await asyncio.gather(*(tab.read_until(PREFLIGHT_DONE, 90) for tab in tabs))
        pids = served.session_pids()  # the tabs' sessions and the spares, ready or starting
        assert len(pids) >= 3, pids
        began = time.monotonic()
        assert await asyncio.to_thread(served.stop, signum) == 0
        stopped = time.monotonic() - began
        print(f"stopped {len(pids)} sessions in {stopped:.1f} s")
        assert not any(alive(pid) for pid in pids)
        assert stopped <= STOP_S, f"the stop took {stopped:.1f} s"
        for tab in tabs:
            await tab.close()


STUCK = [
    sys.executable,
    "-c",
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "sys.stdout.write('__GANGLION__\\n'); sys.stdout.flush(); time.sleep(600)",
]


@pytest.mark.timeout(60)
async def test_a_stop_ends_sessions_that_ignore_quit_and_sigterm_within_seconds(tmp_path: Path) -> None:
    pool = SessionPool(STUCK, 3, tmp_path, spares=0)
    sessions = [pool.reserve() for _ in range(3)]
    await asyncio.gather(*(s.start(80, 24) for s in sessions if s is not None))
    pids = [s.pid for s in sessions if s is not None and s.pid is not None]
    assert len(pids) == 3
    began = time.monotonic()
    await pool.close()
    stopped = time.monotonic() - began
    assert not any(alive(pid) for pid in pids)
    assert stopped <= 4.0, f"stopping 3 stuck sessions took {stopped:.1f} s"
