"""The Nodes step's host check probes the driver's and toolkit's folders too (issue 35, item 1), at 80×24.

The folders are those of the answers so far with the wizard's defaults for the rest (what ``answers init`` writes):
a noexec /run is found on Nodes, before any mode or path is chosen, and holds Next there like nouveau. Paths takes
that answer while its folders are the same (one finding, said and overridden once, no second probe) and probes
the folders the user changes to.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from screens.findings import plan_findings, standing
from tests.helpers.tui import demo_app, on_step, set_field, walk_to
from tests.helpers.walk import forward
from tests.snapshots.plugin import screen_text, wait_for


def count_path_probes(app: Any) -> list[int]:
    """Count the Paths step's own probes (``Cluster.check_paths``) from now on: a spy on the connected cluster."""
    cluster = app.state.cluster
    calls = [0]
    original = cluster.check_paths

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    cluster.check_paths = counted
    return calls


async def test_noexec_run_is_found_on_nodes_and_paths_takes_that_answer(tui_env: Path) -> None:
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        probes = count_path_probes(app)
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "driver-dir on 2 nodes" in text and "noexec" in text, text
        assert "checked on the Paths step" not in text, text
        assert app.screen.blocker() == "1 blocking host problem: fix or tick 'continue anyway'"
        assert "/run is mounted noexec" in app.screen.blocker_detail()
        await pilot.click("#override")
        await forward(pilot, "paths")
        await pilot.pause(0.3)
        assert probes[0] == 0  # the same folders: the Nodes step's answer, not a second probe
        assert app.state.path_checks_from == "nodes"
        assert "from the Nodes step's host check (the same folders)" in " ".join(screen_text(app).split())
        found = [f for f in plan_findings(app.state) if f.message.startswith("driver-dir")]
        assert [(f.step, f.blocking) for f in found] == [("nodes", True)]  # once, the Nodes step's
        assert app.screen.blocker() == ""  # the Nodes step's finding: Paths does not hold it again (Preview does)
        assert [f.step for f in standing(app.state) if f.message.startswith("driver-dir")] == ["nodes"]

        await set_field(pilot, "toolkit-installDir", "/opt/nvidia")  # another folder: Paths probes it
        await wait_for(pilot, lambda: app.state.path_checks is None, 10, "the old answer dropped")
        await pilot.click("#check-paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the path check")
        assert probes[0] == 1 and app.state.path_checks_from == ""
        found = [f for f in plan_findings(app.state) if f.message.startswith("driver-dir")]
        assert [(f.step, f.blocking) for f in found] == [("paths", True)]  # once, now Paths'
        assert on_step(app, "paths") and app.screen.blocker().startswith("path check failed")


async def test_nodes_vouches_for_the_default_folders_it_checked(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "/run/nvidia/driver" in text and "writable, not noexec" in text, text
        assert app.screen.blocker() == ""
