"""A narrow terminal (a phone with ``?fontsize=``, a small window): the DEMO badge stays whole.

The badge is what says the cluster is simulated; the top bar shortens the cluster's name first, and
on the narrowest screens the badge to `` DEMO ``, never to ``D…``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tui import demo_app
from tests.snapshots.plugin import screen_text, wait_for


@pytest.mark.parametrize("width", [44, 60])
async def test_on_a_narrow_screen_the_demo_badge_stays_whole(tui_env: Path, width: int) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(
            pilot, lambda: "gpu-wizard-demo" in screen_text(app) or "DEMO" in screen_text(app), 30, "a frame"
        )
        await pilot.pause(0.5)
        top = screen_text(app).splitlines()[0]
        assert " DEMO " in top, top  # not "D…"
