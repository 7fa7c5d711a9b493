"""Words a first-time installer reads at 80×24 say what they mean (issue 35, the cosmetic items)."""

from __future__ import annotations

from pathlib import Path

from screens.steps.nodes import driver_cell
from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_the_driver_column_says_who_provides_the_driver(tui_env: Path) -> None:
    """Defect 14: Nodes' Driver column showed ``true`` on every row, unexplained."""
    app = demo_app(tui_env, "existing-install-plain")  # the operator's driver runs: deploy.driver=true everywhere
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-a100-01" in screen_text(app), 30, "the node table")
        row = next(line for line in screen_text(app).splitlines() if "gpu-a100-01" in line)
        assert " operator " in row and " true " not in row, row
    node = app.state.nodes["gpu-a100-01"]
    assert driver_cell(node, {}) == "operator"
