"""At 80×24 the Paths step's per-node table is reachable: the row of the node with the problem can be brought on
screen (issue 35 walk, cosmetic 16).

mixed-trouble's noexec node is the table's second row: the table laid itself out taller than the space its box
left under the findings, so the box cut it after the first row, and the table (thinking every row shown) did not
scroll: ``gpu-l40s-2 … ✗ noexec /run`` could not be seen at 80×24 by any key.
"""

from __future__ import annotations

from pathlib import Path

from screens.widgets.pathresults import PathResults
from screens.widgets.rowtable import RowTable
from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_the_noexec_node_s_row_can_be_scrolled_into_view(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        for step in ("mode", "driver", "paths"):
            await next_to(pilot, step)
        await wait_for(pilot, lambda: "noexec /run" in screen_text(app) or "path problems" in screen_text(app), 60)
        await wait_for(pilot, lambda: app.screen.query_one(RowTable).row_count == 3, 60, "the three rows")
        await pilot.pause(0.3)
        box = app.screen.query_one(PathResults).region
        table = app.screen.query_one(RowTable)
        assert table.region.bottom <= box.bottom, (table.region, box)  # not cut by its box
        table.focus()
        await pilot.press("down")  # the cursor-less table scrolls a row per key

        def shown() -> bool:
            return any("noexec /run" in line for line in screen_text(app).splitlines() if "gpu-l40s-2" in line)

        await wait_for(pilot, shown, 10, "gpu-l40s-2's noexec row")  # a fixed pause is too short under load
