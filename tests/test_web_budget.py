"""A session past its share of the server's CPU or memory is ended, with a line to its tab and the console.

In-process seats and pool (:mod:`wizard.web.seats`) with stand-in apps: one that spins on a core, one
that idles (``tests/helpers/web_echo_app.py``), both under a small budget so the check takes seconds.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from tests.helpers.web import ECHO_APP
from wizard.web.budget import Budget
from wizard.web.pool import SessionPool
from wizard.web.seats import CLOSE_REASONS, OVER_BUDGET, Seats

SPINNER = [
    sys.executable,
    "-c",
    "import sys; sys.stdout.write('__GANGLION__\\n'); sys.stdout.flush()\nwhile True: pass",
]


async def _police_until(seats: Seats, seat_id: str, timeout: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        seats.police_once()
        await asyncio.sleep(0.25)
        if seats.get(seat_id) is None:
            return True
    return False


@pytest.mark.timeout(60)
async def test_a_session_past_its_cpu_budget_is_ended_and_an_idle_one_is_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def small() -> Budget:
        return Budget(cpu_budget=0.5, window=10)

    spinning = SessionPool(SPINNER, 1, tmp_path / "spin")
    idle = SessionPool(ECHO_APP, 1, tmp_path / "idle")
    (tmp_path / "spin").mkdir()
    (tmp_path / "idle").mkdir()
    hot, cold = Seats(spinning, grace=0, per_client=0, budget=small), Seats(idle, grace=0, per_client=0, budget=small)
    hog, calm = hot.open("h" * 32, "192.0.2.7"), cold.open("c" * 32, "192.0.2.8")
    assert not isinstance(hog, int) and not isinstance(calm, int)
    await asyncio.gather(hog.session.start(80, 24), calm.session.start(80, 24))
    try:
        with caplog.at_level(logging.WARNING, logger="wizard.web.seats"):
            assert await _police_until(hot, hog.id, 20), "the spinning session was not ended"
            assert not await _police_until(cold, calm.id, 3), "the idle session was ended"
        await asyncio.gather(*hot._ending)
        assert not hog.session.running  # its process group is gone
        lines = [r.getMessage() for r in caplog.records if "ended the session of" in r.getMessage()]
        assert len(lines) == 1 and "192.0.2.7" in lines[0] and "CPU-seconds" in lines[0], lines
        assert b"share of the server" in CLOSE_REASONS[OVER_BUDGET]
    finally:
        await asyncio.gather(spinning.close(), idle.close())


def test_the_budget_counts_cpu_in_a_sliding_window_and_memory_at_once() -> None:
    budget = Budget(cpu_budget=10, window=60, memory_budget=1 << 30)
    assert budget.over(0, 0.0, 100 << 20) == ""
    assert budget.over(30, 9.0, 100 << 20) == ""
    assert budget.over(70, 18.0, 100 << 20) == ""  # 9 CPU-s in the last 40 s: within
    assert "CPU-seconds" in budget.over(80, 30.0, 100 << 20)
    assert "MiB of memory" in Budget(memory_budget=1 << 30).over(0, 0.0, 2 << 30)
