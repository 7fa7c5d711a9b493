"""The precompiled version's example follows the nodes' publisher (issue 35's walk, eks-ubuntu-mirror).

On Ubuntu nodes the empty field read "580.126.09.1 or a branch (580)": a SLE Micro copy's full version, which no
NVIDIA Ubuntu tag carries (theirs are ``<branch>-<kernel>-<os>``).
"""

from __future__ import annotations

from pathlib import Path

from screens.widgets.field import AnswerField
from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import wait_for


async def _placeholder(home: Path, scenario: str) -> str:
    app = demo_app(home, scenario)
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "mode")
        await pilot.click("#mode-precompiled")
        await pilot.pause(0.3)
        await next_to(pilot, "driver")
        return str(app.screen.query_one("#driver-version", AnswerField).input.placeholder)


async def test_ubuntu_nodes_get_a_branch_as_the_example(tui_env: Path) -> None:
    placeholder = await _placeholder(tui_env, "eks-ubuntu-mirror")
    assert "580.126.09.1" not in placeholder and "580" in placeholder, placeholder


async def test_sle_micro_nodes_keep_the_full_version_example(tui_env: Path) -> None:
    assert (await _placeholder(tui_env, "sle-micro-precompiled")).startswith("580.126.09.1")
