"""The classroom's pool of places with a stand-in app (``tests/helpers/web_echo_app.py``): no wizard start-up cost.

Checked: spares warm at a low priority while a student's session runs at full priority (an early
student does not wait for the spares), every session starts exactly once even when tabs take spares
still waiting for a start slot (no "File exists"), and the trainer hears once that the class can start.
Also the relay's input bounds (``wizard/web/relay.py``): long input is one paste, a burst passes,
more waits and nothing is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from tests.helpers.web import ECHO_APP
from wizard.web.pool import SessionPool
from wizard.web.sessions import SPARE_NICE, Session, autogroups


def niceness(pid: int) -> int:
    """What the scheduler weighs session ``pid`` by against other sessions: its autogroup's niceness."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except OSError:  # a kernel without autogroups: sessions are never set apart
        return 0


async def wait_for(condition: object, timeout: float = 20.0) -> None:
    assert callable(condition)
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


async def test_an_early_student_gets_the_spare_furthest_along_and_spares_started_after_run_gently(
    tmp_path: Path,
) -> None:
    gentle = SPARE_NICE if autogroups() else None  # (only where a tab can give the priority back)
    pool = SessionPool(ECHO_APP, 6, tmp_path / "root", spares=4)
    (tmp_path / "root").mkdir()
    pool._warm_slots = asyncio.Semaphore(2)  # as on a 2-core machine, whatever this one has
    try:
        pool.warm()
        await wait_for(lambda: sum(s.running for s in pool.starting) == 2)
        furthest = next(s for s in pool.starting if s.running)
        student = pool.reserve()  # comes before any spare is ready
        assert student is furthest and student.pid is not None and niceness(student.pid) == 0
        other = next(s for s in pool.starting if s.running)  # the other spare running before the student came
        await wait_for(lambda: len(pool.ready) == 4, 30)  # the class can start
        assert niceness(other.pid or 0) == 0
        started_since = [s for s in pool.ready if s is not other]
        assert len(started_since) == 3 and all(s.background == (gentle is not None) for s in started_since)
        if gentle is not None:
            assert [niceness(s.pid or 0) for s in started_since] == [gentle] * 3

        while pool.ready[0] is other:
            pool.ready.append(pool.ready.pop(0))
        taken = pool.reserve()  # a student takes a spare that ran gently: full priority again
        assert taken in started_since and taken is not None and not taken.background
        if gentle is not None:
            assert niceness(taken.pid or 0) == 0
        (refill,) = pool.starting  # and a refill starts, gently
        await wait_for(lambda: refill.running)
        if gentle is not None:
            assert niceness(refill.pid or 0) == gentle
    finally:
        await pool.close()


async def test_tabs_that_take_spares_waiting_for_a_slot_start_each_session_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pool = SessionPool(ECHO_APP, 6, tmp_path / "root", spares=6)
    (tmp_path / "root").mkdir()
    pool._warm_slots = asyncio.Semaphore(2)
    caplog.set_level(logging.ERROR)
    try:
        pool.warm()
        await asyncio.sleep(0)  # the first two spares take the slots; four wait
        sessions = [pool.reserve() for _ in range(6)]
        assert all(isinstance(s, Session) for s in sessions)
        await asyncio.gather(*(s.start(80, 24) for s in sessions if s is not None))
        await wait_for(lambda: not pool.starting and all(s.running for s in sessions if s is not None))
        await asyncio.sleep(0.5)  # the pool's own start tasks have run to their end too
        assert not caplog.records, [r.getMessage() for r in caplog.records]  # no "File exists"
        folders = sorted(p.name for p in (tmp_path / "root").iterdir())
        assert len(folders) == 6 and len({s.pid for s in sessions if s is not None}) == 6
    finally:
        await pool.close()


async def test_the_trainer_hears_once_that_the_class_can_start(tmp_path: Path) -> None:
    heard: list[tuple[int, float]] = []
    (tmp_path / "a").mkdir()
    pool = SessionPool(ECHO_APP, 4, tmp_path / "a", spares=2, on_ready=lambda n, s: heard.append((n, s)))
    try:
        pool.warm()
        assert heard == []
        await wait_for(lambda: heard)
        assert heard[0][0] == 2 and 0 < heard[0][1] < 20
        assert pool.counts() == {"sessions": 0, "ready": 2, "warming": 0, "limit": 4}
        taken = pool.reserve()
        assert taken is not None
        await wait_for(lambda: len(pool.ready) == 2)  # refilled, without a second announcement
        assert len(heard) == 1
    finally:
        await pool.close()
    (tmp_path / "b").mkdir()
    none_asked = SessionPool(ECHO_APP, 4, tmp_path / "b", spares=0, on_ready=lambda n, s: heard.append((n, s)))
    none_asked.warm()
    assert heard[-1][0] == 0 and len(heard) == 2
    await none_asked.close()
    assert os.path.exists(tmp_path) and not (tmp_path / "b").exists()


def test_long_input_is_one_paste_and_keys_are_counted_as_events() -> None:
    from wizard.web.relay import PASTE_END, PASTE_START, as_input

    assert as_input("a") == ("a", 1, 0)
    assert as_input("\x1b[20~") == ("\x1b[20~", 1, 0)  # F9: one event, not five
    assert as_input("\x1b[<35;10;5M") == ("\x1b[<35;10;5M", 1, 0)  # a mouse move
    text, cost, pasted = as_input("a" * 15000)
    assert text == PASTE_START + "a" * 15000 + PASTE_END and cost == 1 and pasted == 15000
    sneaky = PASTE_START + "x" + PASTE_END + "\x1b[20~" * 20 + PASTE_START
    text, _, _ = as_input(sneaky)  # markers inside cannot end the paste early: the keys stay pasted text
    assert text.count(PASTE_START) == 1 and text.count(PASTE_END) == 1 and text.endswith(PASTE_END)


def test_pastes_past_the_paste_rate_are_dropped_and_the_budget_refills() -> None:
    import time

    from wizard.web.relay import Gate

    gate = Gate(paste_rate=1000, paste_burst=16000)
    assert gate.admit_paste(15000)  # one long paste passes at once
    assert not gate.admit_paste(5000) and gate.dropped == 5000  # a flood past the budget is dropped
    time.sleep(0.3)
    assert gate.admit_paste(1000) and not gate.admit_paste(1000)  # ~1,000 a second come back


async def test_input_past_the_burst_waits_and_is_never_dropped() -> None:
    import time

    from wizard.web.relay import Gate

    gate = Gate(rate=100, burst=50)
    began = time.monotonic()
    for _ in range(50):
        await gate.admit(1)
    assert time.monotonic() - began < 0.05  # the burst passes at once
    for _ in range(20):
        await gate.admit(1)
    assert 0.15 < time.monotonic() - began < 1.0  # then 100 a second: 20 more take ~0.2 s
