"""Paths' per-node table keeps long node names apart at 80×24 (issue 35's walk, eks-ubuntu-mirror).

EKS names its nodes ``ip-10-20-33-120.us-west-2.compute.internal``: the 15-cell node column cut the end off, and both
A100 nodes read ``ip-10-20-33-12…``.
"""

from __future__ import annotations

from pathlib import Path

from screens.widgets.rowtable import RowTable
from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def test_a_long_name_keeps_what_tells_it_apart() -> None:
    from screens.widgets.pathresults import node_label

    assert node_label("gpu-a100-01") == "gpu-a100-01"
    assert node_label("ip-10-20-33-120.us-west-2.compute.internal") == "ip-10-20-33-120"
    label = node_label("a-very-long-node-name-without-dots-0042")
    assert len(label) == 15 and label.endswith("0042") and "…" in label


async def test_paths_rows_tell_eks_nodes_apart(tui_env: Path) -> None:
    app = demo_app(tui_env, "eks-ubuntu-mirror")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 60, "the node-side checks")
        # the Nodes step's answer is reused here, its note above the table: the table scrolls a row per key
        seen = screen_text(app)
        app.screen.query_one(RowTable).focus()
        for _ in range(4):
            if "ip-10-20-33-121" in seen:
                break
            await pilot.press("down")
            await pilot.pause(0.2)
            seen += screen_text(app)
        assert "ip-10-20-33-120 " in seen and "ip-10-20-33-121 " in seen, seen
