"""Malformed requests get a clean 400/403 and the trainer's console one line each, rate-limited, never a traceback.

The real ``gpu-wizard serve`` on loopback, raw request bytes (no client library cleans them up): a raw
non-ASCII byte in the address, a 10 KB token, a 10 KB cookie, a 20 KB header, a bad Content-Length,
encodings of the token, cookie and status key that are not UTF-8, a foreign ``Origin``; then a
flood of bad requests, which must cost the console a few lines.
"""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.web import ServedWizard
from wizard.web.refusals import LINES_PER_WINDOW, RateLimit

pytestmark = pytest.mark.timeout(240)

PROBES = [
    b"GET /\xff HTTP/1.1\r\n",
    b"GET /?token=" + b"a" * 10240 + b" HTTP/1.1\r\n",
    b"GET / HTTP/1.1\r\nCookie: gpu-wizard-classroom=" + b"a" * 10240 + b"\r\n",
    b"GET / HTTP/1.1\r\nX-Padding: " + b"b" * 20000 + b"\r\n",
    b"GET / HTTP/1.1\r\nContent-Length: abc\r\n",
    b"GET /?token=%FF%FE HTTP/1.1\r\n",
    b"GET / HTTP/1.1\r\nCookie: gpu-wizard-classroom=\xff\xfe\x1b[31m\r\n",
    b"GET /status?key=%FF HTTP/1.1\r\n",
    b"GET /ws HTTP/1.1\r\nOrigin: http://evil.example\xff\r\nCookie: gpu-wizard-classroom=x\r\n",
]


async def _status(port: int, head: bytes) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head + b"Host: 127.0.0.1\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return int(answer.split(b" ", 2)[1])


async def test_malformed_requests_get_400_or_403_and_one_console_line_each_never_a_traceback() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0") as served:
        port = int(served.url.rsplit(":", 1)[1].strip("/"))
        for probe in PROBES:
            assert await _status(port, probe) in (400, 403), probe[:60]
        assert served.stop() == 0
        assert served.process.stderr is not None
        console = served.process.stderr.read()
    assert "Traceback" not in console and "aiohttp" not in console, console[:3000]
    lines = console.splitlines()
    refused = [line for line in lines if "refused 127.0.0.1: 400, " in line or "refused 127.0.0.1: 403, " in line]
    assert len(refused) == len(PROBES) == len(lines), console  # one line each, nothing else
    assert all(line.isascii() and line.isprintable() for line in lines), console


async def test_a_flood_of_bad_requests_costs_the_console_a_few_lines() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0") as served:
        port = int(served.url.rsplit(":", 1)[1].strip("/"))
        for _ in range(100):
            assert await _status(port, PROBES[1]) == 400
        served.stop()
        assert served.process.stderr is not None
        console = served.process.stderr.read()
    assert "Traceback" not in console
    assert len(console.splitlines()) <= LINES_PER_WINDOW + 1, console[:3000]


def test_the_rate_limit_says_how_many_lines_it_held_back() -> None:
    limit = RateLimit(lines=2, window=10)
    assert [limit.admit(now)[0] for now in (0, 1, 2, 3)] == [True, True, False, False]
    assert limit.admit(11) == (True, 2)  # the next window opens with the count of the last one
