"""Connect-and-close cycles do not drain the spares, whatever ``--grace`` says.

With ``--grace 0`` a closed tab's session used to end at once: a browser that connects and closes in
a loop took a fresh spare each time (50 cycles took 10 spares to 0, 24.6 s to refill). A closed tab's
session now outlives it by :data:`~wizard.web.seats.REATTACH_S` at least, so the same browser finds
it again, and one address opens at most ``--max-per-client`` new seats a minute.
"""

from __future__ import annotations

import asyncio

import pytest

from benchmarks.web import PREFLIGHT_DONE, ServedWizard, Tab

pytestmark = pytest.mark.timeout(240)


async def test_with_grace_0_connect_close_cycles_reattach_and_leave_the_spares() -> None:
    limits = ("--max-sessions", "8", "--spares", "2", "--grace", "0", "--max-per-client", "3")
    with ServedWizard(*limits) as served:
        await asyncio.to_thread(served.wait_for_spares, 2)
        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 60)
        await asyncio.to_thread(served.wait_for_spares, 2)  # the spare the tab took is replaced
        before = set(served.session_pids())  # this tab's session and the spares
        for _ in range(30):  # one browser: close and connect again, 30 times
            await tab.socket.close()  # type: ignore[union-attr]
            await tab.connect()
            assert tab.status == 101
        await tab.read_until(PREFLIGHT_DONE, 30)
        counts = served.status()
        assert counts["sessions"] == 1 and counts["ready"] == 2, counts
        assert set(served.session_pids()) == before  # no session ended, no spare taken or started

        codes = []
        for _ in range(20):  # cookie-less clients from the same address: a new seat each time
            stranger = Tab(served)
            await stranger.open()
            try:
                codes.append(await stranger.close_code(2))
            except TimeoutError:  # not refused: a session
                codes.append(stranger.status)
            await stranger.close()
        assert codes.count(101) == 2 and codes.count(4429) == 18, codes  # 3 new seats a minute, this tab's included
        assert served.status()["sessions"] <= 3
        await tab.close()
