"""Classroom benchmark: N students open the served wizard together; time to first frame and to preflight.

Starts the real ``gpu-wizard serve --demo SCENARIO --port 0`` in its own process, then N websocket
clients at once, each exactly as a browser tab does it (the token link for the cookie, then
``/ws`` with the page's Origin). Per session it times, from the moment the tab connects:

* **first frame** — the Connect step's title bar (``1/8 Connect``) has reached the client;
* **preflight** — the first preflight result (``GPU Operator CRDs installed``) has reached it: the
  session's demo cluster started, the wizard connected and ran its checks.

and, once every session has its preflight, the memory of each session's process group (RSS, and
PSS, which shares the pages of libraries fairly between processes). The target for 10 sessions on
2 cores is a first frame within 2 s and a preflight within 10 s for every session.

    .venv/bin/python benchmarks/web.py [--sessions 1 10 20] [--scenario S] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
FIRST_FRAME = "1/8 Connect"
PREFLIGHT_DONE = "CRDs installed"
TARGET_FIRST_FRAME_S = 2.0
TARGET_PREFLIGHT_S = 10.0
_ESCAPES = re.compile(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]")


def screen_text(raw: str) -> str:
    """Terminal output with its escape sequences removed (enough to find a phrase the app drew)."""
    return _ESCAPES.sub("", raw)


class ServedWizard:
    """``gpu-wizard serve`` in a subprocess: its URL, its pid, and the sessions it runs."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, scenario: str = "sle-micro-precompiled") -> None:
        command = [sys.executable, "-m", "wizard", "serve", "--demo", scenario, "--port", "0", *args]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        self.banner = ""
        for line in self.process.stdout:
            self.banner += line
            if match := re.search(r"status:\s+(\S+)", line):
                self.status_url = match.group(1)
            if match := re.search(r"open:\s+(\S+)", line):
                self.link = match.group(1)
                break
        else:
            raise RuntimeError(f"serve did not start: {self.process.stderr.read() if self.process.stderr else ''}")
        self.url = self.link.split("?", 1)[0]
        self.origin = self.url.rstrip("/")

    @property
    def pid(self) -> int:
        return self.process.pid

    def status(self) -> dict[str, int]:
        """``/status``: sessions in use, spares ready and starting, the limit (the trainer's status key)."""
        import urllib.request

        with urllib.request.urlopen(self.status_url, timeout=10) as answer:
            return dict(json.load(answer))

    def wait_for_spares(self, count: int, timeout: float = 120.0) -> None:
        """Wait until ``count`` spares are ready (started, first frame drawn, preflight done)."""
        deadline = time.monotonic() + timeout
        while self.status()["ready"] < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} spares not ready within {timeout:.0f} s: {self.status()}")
            time.sleep(0.2)

    def console_line(self, prefix: str) -> str:
        """The next line the server prints on stdout that starts with ``prefix`` (blocks until it comes)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith(prefix):
                return line
        raise EOFError(f"the server ended without printing {prefix!r}")

    def session_pids(self) -> list[int]:
        """The session processes (children of the server) still alive."""
        return [pid for pid, ppid, state in _processes() if ppid == self.pid and state != "Z"]

    def stop(self, signum: int = signal.SIGINT, timeout: float = 15.0) -> int:
        """Signal the server and wait for it to exit; returns its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def __enter__(self) -> ServedWizard:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def _processes() -> list[tuple[int, int, str]]:
    """(pid, ppid, state) of every process, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found.append((int(entry.name), int(fields[1]), fields[0]))
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def group_cpu_seconds(pgid: int) -> float:
    """CPU time (user + system) used so far by every process in group ``pgid``."""
    ticks = 0
    for pid, _, _ in _processes():
        try:
            if os.getpgid(pid) != pgid:
                continue
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def group_memory(pgid: int) -> tuple[int, int]:
    """(RSS, PSS) in bytes of every process in group ``pgid``."""
    rss = pss = 0
    for pid, _, _ in _processes():
        try:
            if os.getpgid(pid) != pgid:
                continue
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in rollup.splitlines():
            name, _, value = line.partition(":")
            if name == "Rss":
                rss += int(value.split()[0]) * 1024
            elif name == "Pss":
                pss += int(value.split()[0]) * 1024
    return rss, pss


@dataclass
class Tab:
    """One browser tab's view of its session: what it was sent, and when."""

    served: ServedWizard
    http: aiohttp.ClientSession = field(init=False)
    socket: aiohttp.ClientWebSocketResponse | None = None
    output: str = ""
    status: int = 0
    """The websocket handshake's HTTP status (101: open; a refusal after it is a close code)."""
    started: float = 0.0
    first_frame: float | None = None
    preflight: float | None = None

    async def open(self, *, origin: str | None = None, token: str | None = None, width: int = 100) -> None:
        """Get the cookie through the link, then open the session's websocket (``status`` says how it went)."""
        self.http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        link = self.served.link if token is None else f"{self.served.url}?token={token}"
        async with self.http.get(link) as page:
            self.page_status = page.status
            self.page_text = await page.text()
        await self.connect(origin=origin, width=width)

    async def connect(self, *, origin: str | None = None, width: int = 100) -> None:
        """Open the session's websocket with this tab's cookies (again: a reload); ``output`` starts empty."""
        self.started = time.perf_counter()
        self.output = ""
        ws_url = self.served.url.replace("http", "ws", 1) + f"ws?width={width}&height=30"
        try:
            self.socket = await self.http.ws_connect(ws_url, origin=origin or self.served.origin)
            self.status = 101
        except aiohttp.WSServerHandshakeError as exc:
            self.status = exc.status

    async def read_until(self, text: str, timeout: float) -> float:
        """Seconds from opening until ``text`` was drawn (TimeoutError after ``timeout``)."""
        assert self.socket is not None
        async with asyncio.timeout(timeout):
            while text not in screen_text(self.output):
                message = await self.socket.receive()
                if message.type == aiohttp.WSMsgType.BINARY:
                    self.output += message.data.decode("utf-8", "replace")
                elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    raise ConnectionError(f"the session closed ({self.socket.close_code}) before {text!r} was drawn")
        return time.perf_counter() - self.started

    async def close_code(self, timeout: float = 10.0) -> int | None:
        """The code the server closed the websocket with (what it sent before is kept in ``output``)."""
        assert self.socket is not None
        async with asyncio.timeout(timeout):
            while True:
                message = await self.socket.receive()
                if message.type == aiohttp.WSMsgType.BINARY:
                    self.output += message.data.decode("utf-8", "replace")
                elif message.type == aiohttp.WSMsgType.CLOSE:
                    return int(message.data)  # (the socket's own close_code may say 1006 once the server hung up)
                elif message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    return self.socket.close_code

    async def press(self, keys: str) -> None:
        """Type into the session as the browser's terminal does."""
        assert self.socket is not None
        await self.socket.send_json(["stdin", keys])

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
        await self.http.close()


async def measure(count: int, scenario: str, timeout: float, *, warm: bool) -> dict[str, object]:
    """Open ``count`` tabs at once on a fresh server; times and memory per session.

    ``warm``: the server starts ``count`` spares and the tabs open once they are ready (a trainer who
    starts the server before the class); otherwise ``--spares 0`` and every session starts cold.
    """
    spares = str(count if warm else 0)
    began = time.perf_counter()
    limits = ("--max-sessions", str(count), "--spares", spares, "--max-per-client", "0")
    with ServedWizard(*limits, scenario=scenario) as served:
        if warm:
            await asyncio.to_thread(served.wait_for_spares, count, timeout)
        spares_ready = time.perf_counter() - began if warm else None
        tabs = [Tab(served) for _ in range(count)]

        async def one(tab: Tab) -> None:
            await tab.open()
            tab.first_frame = await tab.read_until(FIRST_FRAME, timeout)
            tab.preflight = await tab.read_until(PREFLIGHT_DONE, timeout)

        await asyncio.gather(*(one(tab) for tab in tabs))
        memory = [group_memory(pid) for pid in served.session_pids()]
        cpu = [group_cpu_seconds(pid) for pid in served.session_pids()]
        await asyncio.gather(*(tab.close() for tab in tabs))
    frames = [t.first_frame or 0.0 for t in tabs]
    preflights = [t.preflight or 0.0 for t in tabs]
    return {
        "sessions": count,
        "start": "warm" if warm else "cold",
        "spares_ready_s": spares_ready,
        "first_frame_s": {"median": statistics.median(frames), "max": max(frames)},
        "preflight_s": {"median": statistics.median(preflights), "max": max(preflights)},
        "rss_mib_per_session": statistics.mean(m[0] for m in memory) / 2**20 if memory else 0.0,
        "pss_mib_per_session": statistics.mean(m[1] for m in memory) / 2**20 if memory else 0.0,
        "cpu_s_per_session": statistics.mean(cpu) if cpu else 0.0,
        "load_average": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 10, 20])
    parser.add_argument("--scenario", default="sle-micro-precompiled")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per session before giving up")
    parser.add_argument("--start", choices=("cold", "warm", "both"), default="both")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    starts = ("cold", "warm") if args.start == "both" else (args.start,)
    results = [
        asyncio.run(measure(n, args.scenario, args.timeout, warm=start == "warm"))
        for start in starts
        for n in args.sessions
    ]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(
        "| start | sessions | first frame median / max | preflight median / max "
        "| RSS per session | PSS per session | CPU per session | spares ready after | load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ff, pf, ready = r["first_frame_s"], r["preflight_s"], r["spares_ready_s"]
        assert isinstance(ff, dict) and isinstance(pf, dict)
        print(
            f"| {r['start']} | {r['sessions']} | {ff['median']:.2f} s / {ff['max']:.2f} s "
            f"| {pf['median']:.2f} s / {pf['max']:.2f} s "
            f"| {r['rss_mib_per_session']:.0f} MiB | {r['pss_mib_per_session']:.0f} MiB "
            f"| {r['cpu_s_per_session']:.2f} s | {'-' if ready is None else f'{ready:.0f} s'} "
            f"| {r['load_average']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
