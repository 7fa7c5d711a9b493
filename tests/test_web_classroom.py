"""The classroom under strain, without a browser: the real ``gpu-wizard serve`` and plain HTTP/websocket clients.

Only loopback, and every loop bounded in count and time. Checked: a closed or reloaded tab keeps its
session and the same browser reattaches to it; one client cannot take the class (per-client limit),
and 50 connect-and-close cycles leave the spares alone; an oversized key message costs the session
no more than one paste; a race for the last place is told "full"; hostile token, cookie and key
bytes get a clean 4xx; ``/status`` is the trainer's; ``?fontsize=`` survives the redirect; a public
URL with a path answers under it; the console says when the class can start.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import aiohttp
import pytest

from benchmarks.web import FIRST_FRAME, PREFLIGHT_DONE, ServedWizard, Tab, alive, group_cpu_seconds, screen_text
from tests.helpers.web import next_step, wait_until

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def idle_server() -> Iterator[ServedWizard]:
    """A server that never starts a session here (HTTP checks only)."""
    with ServedWizard("--max-sessions", "1", "--spares", "0") as served:
        yield served


async def raw_request(served: ServedWizard, head: bytes) -> tuple[int, bytes]:
    """Send exactly these request bytes (no client library cleans them up); the status and the answer."""
    port = int(served.url.rsplit(":", 1)[1].strip("/"))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return int(answer.split(b" ", 2)[1]), answer


async def test_non_ascii_tokens_cookies_and_keys_get_a_clean_4xx(idle_server: ServedWizard) -> None:
    token = idle_server.link.split("token=", 1)[1]
    probes = [
        b"GET /?token=%C3%A9t%C3%A9 HTTP/1.1\r\n",
        b"GET /?token=" + token.encode()[:-1] + b"%FF HTTP/1.1\r\n",
        b"GET / HTTP/1.1\r\nCookie: gpu-wizard-classroom=\xc3\xa9t\xc3\xa9\r\n",
        b"GET /ws HTTP/1.1\r\nCookie: gpu-wizard-classroom=\xe2\x82\xac\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nConnection: Upgrade\r\n",
        b"GET /status?key=%E2%82%AC HTTP/1.1\r\n",
    ]
    for probe in probes:
        status, answer = await raw_request(idle_server, probe)
        assert 400 <= status < 500, (probe, answer[:200])
    status, answer = await raw_request(
        idle_server,
        b"GET / HTTP/1.1\r\nCookie: gpu-wizard-classroom=" + token.encode() + b"; gpu-wizard-seat=\xc3\xa9\r\n",
    )
    assert status == 200 and b"Set-Cookie: gpu-wizard-seat=" in answer  # a bad seat is replaced, not an error
    assert idle_server.process.poll() is None


async def test_the_static_folders_give_nothing_outside_them(idle_server: ServedWizard) -> None:
    for path in (
        b"/static/classroom/../../pyproject.toml",
        b"/static/classroom/..%2f..%2fpyproject.toml",
        b"/static/classroom/%2e%2e/%2e%2e/README.md",
        b"/static/..%2f..%2f..%2fetc/passwd",
        b"/static/classroom//etc/passwd",
        b"/static/classroom/",
    ):
        status, answer = await raw_request(idle_server, b"GET " + path + b" HTTP/1.1\r\n")
        assert status in (403, 404), (path, answer[:200])
    status, answer = await raw_request(idle_server, b"GET /static/classroom/classroom.js HTTP/1.1\r\n")
    assert status == 200 and b"ClassroomWebSocket" in answer


async def test_status_is_for_the_trainer_not_for_students_with_the_link(idle_server: ServedWizard) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as student:
        async with student.get(idle_server.link) as page:
            assert page.status == 200
        async with student.get(idle_server.url + "status") as status:
            assert status.status == 403 and "console" in await status.text()
        async with student.get(idle_server.url + "status?key=guessed") as status:
            assert status.status == 403
    assert idle_server.status() == {"sessions": 0, "ready": 0, "warming": 0, "limit": 1}


async def test_fontsize_survives_the_redirect_and_reaches_the_terminal(idle_server: ServedWizard) -> None:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        async with browser.get(idle_server.link + "&fontsize=12", allow_redirects=False) as redirect:
            assert redirect.status == 303 and redirect.headers["Location"] == "/?fontsize=12"
        async with browser.get(idle_server.url + "?fontsize=12") as page:
            text = await page.text()
            assert 'data-font-size="12"' in text and 'data-fit="false"' in text
        async with browser.get(idle_server.url) as page:
            assert 'data-font-size="16"' in await page.text() and 'data-fit="true"' in await page.text()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_public_url_with_a_path_answers_under_it_with_or_without_a_proxy_that_strips_it() -> None:
    port = free_port()
    public = f"http://localhost:{port}/class/"
    limits = ("--max-sessions", "2", "--spares", "0", "--max-per-client", "1", "--grace", "0")
    with ServedWizard(*limits, "--port", str(port), "--public-url", public) as served:
        assert served.link.startswith(public + "?token=")
        token = served.link.split("token=", 1)[1]
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            async with browser.get(served.link) as page:  # /class/?token= → /class/
                assert page.status == 200 and str(page.url) == public
                assert f'data-session-websocket-url="ws://localhost:{port}/class/ws"' in await page.text()
            async with browser.get(f"http://localhost:{port}/class/static/classroom/classroom.js") as script:
                assert script.status == 200
            async with browser.get(f"http://localhost:{port}/?token={token}") as stripped:  # a proxy that strips /class
                assert stripped.status == 200
            socket_ = await browser.ws_connect(
                f"ws://localhost:{port}/class/ws?width=100&height=30", origin=public[:-7]
            )
            output = ""
            async with asyncio.timeout(60):
                while FIRST_FRAME not in screen_text(output):
                    message = await socket_.receive()
                    assert message.type == aiohttp.WSMsgType.BINARY, message
                    output += message.data.decode("utf-8", "replace")

            # behind a proxy on this machine the client is the last address it names: one place each
            for forwarded, expected in (("127.0.0.1", 4429), ("198.51.100.9, 203.0.113.7", None)):
                async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as client:
                    async with client.get(served.link) as page:
                        assert page.status == 200
                    other = await client.ws_connect(
                        f"ws://localhost:{port}/class/ws", origin=public[:-7], headers={"X-Forwarded-For": forwarded}
                    )
                    try:
                        message = await other.receive(timeout=3)
                        code = int(message.data) if message.type == aiohttp.WSMsgType.CLOSE else None
                    except TimeoutError:
                        code = None
                    assert code == expected, (forwarded, code)
                    await other.close()
            await socket_.close()


def test_a_plain_http_public_url_warns_that_the_token_crosses_the_network_unencrypted() -> None:
    served = ServedWizard("--max-sessions", "1", "--spares", "0", "--public-url", "http://class.example.com/")
    try:
        assert served.process.stderr is not None
        warning = served.process.stderr.readline()
    finally:
        served.stop()
    assert "plain HTTP" in warning and "unencrypted" in warning and "https://" in warning
    with ServedWizard("--max-sessions", "1", "--spares", "0", "--public-url", "https://class.example.com/") as tls:
        tls.stop()
        assert tls.process.stderr is not None and "unencrypted" not in tls.process.stderr.read()


async def test_a_closed_or_reloaded_tab_keeps_its_session_and_the_same_browser_reattaches() -> None:
    with ServedWizard("--max-sessions", "2", "--spares", "0", "--grace", "4") as served:
        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 90)
        (pid,) = served.session_pids()
        await tab.press("\x1b[20~")  # F9: on to the Nodes step
        await tab.read_until("2/8 Nodes", 30)
        await tab.socket.close()  # type: ignore[union-attr]  # the tab is closed (or reloaded)…
        await asyncio.sleep(1.5)
        assert alive(pid) and served.status()["sessions"] == 1  # …and the session runs on

        await tab.connect()  # the same browser comes back
        await tab.read_until("2/8 Nodes", 15)
        drawn = screen_text(tab.output)
        assert "gpu-wizard" in drawn and "F9 Next" in drawn and "DEMO" in drawn  # repainted whole, not a diff
        assert served.session_pids() == [pid]

        other = Tab(served)  # another browser: a session of its own
        await other.open()
        await other.read_until(FIRST_FRAME, 90)
        assert len(served.session_pids()) == 2
        await other.close()

        second_tab = Tab(served)  # the same browser in a second tab: the session moves there
        second_tab.http = tab.http
        await second_tab.connect()
        await second_tab.read_until("2/8 Nodes", 15)
        assert await tab.close_code() == 4001
        await second_tab.socket.close()  # type: ignore[union-attr]
        assert await asyncio.to_thread(wait_until, lambda: not alive(pid), 15)  # ended once the grace ran out
        assert await asyncio.to_thread(wait_until, lambda: served.status()["sessions"] == 0, 10)
        await tab.close()


async def test_one_client_cannot_take_the_class_and_connect_close_cycles_leave_the_spares() -> None:
    limits = ("--max-sessions", "6", "--spares", "2", "--max-per-client", "2", "--grace", "60")
    with ServedWizard(*limits) as served:
        await asyncio.to_thread(served.wait_for_spares, 2)
        ready_line = await asyncio.wait_for(asyncio.to_thread(served.console_line, "ready:"), 10)
        assert ready_line.startswith("ready: 2 session(s) started ahead in ") and "the class can start" in ready_line

        began = time.monotonic()
        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 30)
        for _ in range(50):  # one browser: close and connect again, 50 times
            await tab.socket.close()  # type: ignore[union-attr]
            await tab.connect()
            assert tab.status == 101
        await tab.read_until(PREFLIGHT_DONE, 30)
        assert served.status()["sessions"] == 1

        codes = []
        for _ in range(50):  # a client without cookies: a new seat each time
            stranger = Tab(served)
            await stranger.open()
            try:
                codes.append(await stranger.close_code(2))
            except TimeoutError:  # not refused: a session
                codes.append(stranger.status)
            await stranger.close()
        assert codes.count(101) == 1 and codes.count(4429) == 49, codes  # one more place for this address: 2 in all
        assert served.status()["sessions"] == 2
        assert await asyncio.to_thread(wait_until, lambda: served.status()["ready"] == 2, 60)
        assert time.monotonic() - began < 120
        await tab.close()


async def test_an_oversized_key_message_costs_one_paste_and_a_larger_one_is_refused() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0", "--grace", "30") as served:
        early = Tab(served)  # a second browser that loaded the page while the place was free
        early.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        async with early.http.get(served.link) as page:
            assert page.status == 200

        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 90)
        (pid,) = served.session_pids()
        await next_step(tab, "2/8 Nodes")
        await next_step(tab, "3/8 Mode")
        await next_step(tab, "4/8 Driver")
        await tab.read_until("Driver version", 30)
        await asyncio.sleep(2.0)  # the version field has the focus: every key would be typed into it
        before = group_cpu_seconds(pid)
        await tab.press("a" * 15000)  # one message of 15,000 keys: delivered as one paste
        await tab.press("\x1bOQ")  # F2: the session still answers soon
        tab.output = ""
        await tab.read_until("Help —", 20)
        await asyncio.sleep(1.0)
        cost = group_cpu_seconds(pid) - before
        assert cost < 2.0, f"one oversized key message cost the session {cost:.1f} CPU-s"

        await tab.socket.send_str('["stdin", "' + "a" * (64 * 1024) + '"]')  # type: ignore[union-attr]
        assert await tab.close_code() == 1009  # message too big: this socket is closed…
        assert alive(pid) and served.session_pids() == [pid]  # …and the session is kept for the browser

        await early.connect()  # the race for the last place: told "full", not "ended"
        assert early.status == 101 and await early.close_code() == 4503
        await early.close()
        await tab.connect()
        await tab.read_until("Help —", 20)
        await tab.close()


async def test_a_tab_closed_mid_apply_finds_the_rollout_going_on_when_it_comes_back() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0", scenario="existing-install") as served:
        tab = Tab(served)
        await tab.open()
        await tab.read_until("✓ operator", 90)
        await next_step(tab, "2/8 Nodes")
        await tab.read_until("● live", 60)
        await next_step(tab, "3/8 Mode")
        if await next_step(tab, "4/8 Driver", "5/8 Paths") == "4/8 Driver":
            await asyncio.sleep(1.5)
            await next_step(tab, "5/8 Paths")
        await tab.read_until("usable on all", 60)
        await next_step(tab, "6/8 Preview")
        await tab.read_until("server dry-run accepted", 120)
        await next_step(tab, "7/8 Apply")
        (pid,) = served.session_pids()
        await tab.press("\r")
        await tab.read_until("Apply to", 20)
        await tab.press("\t")
        await tab.press("\r")  # confirmed: the apply starts…
        await tab.socket.close()  # type: ignore[union-attr]  # …and the tab is closed at once, mid-apply
        await asyncio.sleep(2.0)
        assert alive(pid)
        await tab.connect()
        await tab.read_until("7/8 Apply", 20)  # back where it was…
        await tab.read_until("reports the driver ready", 120)  # …and the apply went on to its end meanwhile
        assert "Backup (undo" in screen_text(tab.output)
        assert served.session_pids() == [pid]
        await tab.close()
