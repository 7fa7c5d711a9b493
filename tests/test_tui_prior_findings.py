"""A rollout on hosts found unfit before apply ends at once in the TUI, naming the finding (issue 35, defect 3).

Pilot at 80×24 against the demo cluster (its real HTTPS API): nouveau on gpu-l40s-1 (Nodes) and a noexec ``/run``
on gpu-l40s-2 (Paths) are overridden; after Apply the rollout used to wait out its 300 s crash window, Verify
refused with "the operator is rolling out the driver…" all along, and it ended with the driver pod's last log line.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.helpers.tui import apply_and_roll_out, demo_app, next_to, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_a_pod_failing_on_a_host_found_unfit_ends_the_rollout_at_once_with_the_finding(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")  # nouveau on gpu-l40s-1: continue anyway
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the automatic path check")
        await pilot.click("#override")  # noexec /run on gpu-l40s-2: continue anyway
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "apply")
        started = time.monotonic()
        await apply_and_roll_out(pilot, expect_warning=None)  # waits at most 60 s: the crash window was 300 s
        took = time.monotonic() - started
        rollout = app.screen._rollout
        assert rollout.phase == "failed", rollout.message
        assert "failed as found before apply (overridden)" in rollout.message, rollout.message
        assert "gpu-l40s-1: nouveau-loaded" in rollout.message and "gpu-l40s-2: driver-dir" in rollout.message
        assert "keeps failing" not in rollout.message
        assert took < 30, f"the rollout took {took:.1f} s"
        said = " ".join(str(app.screen.query_one("#rollout-state").content).split())
        assert "✗[/] gpu-l40s-1: the open-source nouveau driver is loaded" in said, said  # below the fold at 80×24
        assert "(found before apply as nouveau-loaded, overridden)" in said and "blacklist nouveau" in said
        assert app.screen.blocker() != "the operator is rolling out the driver…"
        assert "rolling out the driver" not in screen_text(app)
