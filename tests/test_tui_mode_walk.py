"""Mode, as the issue 35 walk at 80×24 found it: what the host check found is said where the mode is chosen.

secure-boot (Rocky 9.4, Secure Boot on, no host driver): the Secure Boot fix names mode: preinstalled; a newcomer
who chose it there heard nothing of the host check's "driver on 0/2" until Preview blocked on ``no-host-driver``.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_pre_installed_over_hosts_without_a_driver_is_warned_on_mode(tui_env: Path) -> None:
    app = demo_app(tui_env, "secure-boot")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        await next_to(pilot, "mode")
        await pilot.click("#mode-preinstalled")
        await pilot.pause(0.3)
        assert app.state.get("mode") == "preinstalled"
        text = " ".join(screen_text(app).split())
        assert "the host check found no working driver on gpu-a100-01, gpu-a100-02" in text, text
