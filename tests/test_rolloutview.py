"""The Apply step's rollout table (screens/widgets/rolloutview.py) from one snapshot to the next.

At 5,000 nodes a snapshot comes several times a second: when its rows are the last one's, only the cells that
changed are set (the table is not rebuilt); when rows come or go, the table holds exactly the new ones, in order.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from screens.widgets.rolloutview import RolloutView
from screens.widgets.rowtable import RowTable
from wizard.cluster.rollouts.rollout import RolloutStatus
from wizard.cluster.rollouts.rollout_verdict import DaemonSetStatus


class Holder(App[None]):
    def compose(self) -> ComposeResult:
        yield RolloutView()


def status(states: dict[str, str], ready: int = 1) -> RolloutStatus:
    driver = DaemonSetStatus("nvidia-driver-daemonset", 3, ready, ready)
    return RolloutStatus("progressing", "driver pods ready", "notReady", [], [driver], states)


def cells(table: RowTable) -> list[tuple[str, str]]:
    return [(row[0].plain, row[1].plain) for row in (table.get_row_at(i) for i in range(table.row_count))]


async def test_the_same_rows_change_only_their_cells_and_new_rows_replace_them() -> None:
    app = Holder()
    async with app.run_test(size=(80, 24)) as pilot:
        view, table = app.query_one(RolloutView), app.query_one(RowTable)
        view.show(status({"gpu-0": "upgrade-required", "gpu-1": "upgrade-required"}), sent=True, advice=[])
        await pilot.pause()
        cleared: list[int] = []
        clear = table.clear

        def counted_clear() -> None:
            cleared.append(1)
            clear()

        table.clear = counted_clear  # type: ignore[method-assign]

        view.show(status({"gpu-0": "upgrade-done", "gpu-1": "upgrade-required"}, ready=2), sent=True, advice=[])
        assert not cleared  # the same rows: cells set in place
        assert cells(table) == [
            ("ds/nvidia-driver-daemonset", "… 2/3 ready, 2 updated"),
            ("gpu-0", "upgrade-done"),
            ("gpu-1", "upgrade-required"),
        ]

        view.show(status({"gpu-1": "upgrade-done", "gpu-2": "cordon-required"}), sent=True, advice=[])
        assert cleared  # other rows: the table holds exactly the new ones
        assert cells(table) == [
            ("ds/nvidia-driver-daemonset", "… 1/3 ready, 1 updated"),
            ("gpu-1", "upgrade-done"),
            ("gpu-2", "cordon-required"),
        ]

        view.say("not started")
        view.show(status({"gpu-1": "upgrade-done", "gpu-2": "cordon-required"}), sent=True, advice=[])
        assert len(cells(table)) == 3  # after say() cleared it, the same rows come back whole
