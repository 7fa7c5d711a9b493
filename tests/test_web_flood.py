"""A paste or key flood costs its session a few CPU-seconds, and the session still answers.

The real ``gpu-wizard serve``: a tab walks to the Driver step, whose version field has the focus, and
sends bracketed pastes of 1,000 characters as fast as its socket takes them for
``GPU_WIZARD_FLOOD_S`` seconds (default 8; the issue's measurement was 30). The session's process
group must have used at most :data:`MAX_FLOOD_CPU_S` CPU-seconds from the first paste until it
answers F2 again, and it must answer within :data:`ANSWER_S` seconds of the flood's end.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from benchmarks.web import PREFLIGHT_DONE, ServedWizard, Tab, group_cpu_seconds
from tests.helpers.web import next_step

pytestmark = pytest.mark.timeout(400)

FLOOD_S = float(os.environ.get("GPU_WIZARD_FLOOD_S", "8"))
MAX_FLOOD_CPU_S = 4.0
ANSWER_S = 15.0
PASTE = "\x1b[200~" + "a" * 1000 + "\x1b[201~"


async def test_a_paste_flood_costs_its_session_a_few_cpu_seconds_and_it_still_answers() -> None:
    with ServedWizard("--max-sessions", "1", "--spares", "0") as served:
        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 90)
        (pid,) = served.session_pids()
        await next_step(tab, "2/8 Nodes")
        await next_step(tab, "3/8 Mode")
        await next_step(tab, "4/8 Driver")
        await tab.read_until("Driver version", 30)
        await asyncio.sleep(2.0)  # the version field has the focus
        before, server_before = group_cpu_seconds(pid), group_cpu_seconds(served.pid)
        began = time.monotonic()
        sent = 0
        while time.monotonic() - began < FLOOD_S:
            await tab.press(PASTE)
            sent += 1
            if sent % 20 == 0:
                await asyncio.sleep(0)  # (let the client read what the session draws)
        flood_end = time.monotonic()
        server_cost = group_cpu_seconds(served.pid) - server_before
        await tab.press("\x1bOQ")  # F2
        tab.output = ""
        try:
            await tab.read_until("Help —", ANSWER_S)
            answered = f"answered {time.monotonic() - flood_end:.1f} s after it"
        except TimeoutError:
            answered = f"no answer {ANSWER_S:g} s after it"
        cost = group_cpu_seconds(pid) - before
        print(
            f"flood {FLOOD_S:g} s, {sent} pastes sent: session {cost:.1f} CPU-s, server {server_cost:.1f} CPU-s, {answered}"
        )
        assert cost <= MAX_FLOOD_CPU_S, f"a {FLOOD_S:g} s paste flood cost the session {cost:.1f} CPU-s ({answered})"
        assert answered.startswith("answered"), answered
        await tab.close()
