"""How the CLI shows a followed rollout: each node's upgrade state with its time in state when few nodes
upgrade, a throttled summary per state at scale, stuck nodes named once, and ``-o json`` carrying it all.

The printer is fed the follower's own snapshot type (:class:`RolloutStatus`) on a test clock; the end-to-end
test follows a real upgrade of the demo's ``existing-install-plain`` through ``gpu-wizard upgrade``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from wizard.cli.main import main
from wizard.cli.rollout_progress import OLDEST, RolloutPrinter
from wizard.cluster.rollouts.rollout import RolloutStatus, stalled_message
from wizard.engine.upgradestates import UPGRADE_STATES, duration_text, stuck_nodes, summarize


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def status(states: dict[str, str], seconds: dict[str, float], phase: str = "progressing") -> RolloutStatus:
    message = "driver pods ready: nvidia-driver-daemonset 1/2"
    return RolloutStatus(phase, message, upgrade_states=states, time_in_state=seconds, elapsed=65.0)  # type: ignore[arg-type]


def test_summary_follows_the_state_machine_and_names_the_oldest() -> None:
    states = {"n1": "upgrade-done", "n2": "drain-required", "n3": "drain-required", "n4": "upgrade-required"}
    seconds = {"n1": 5.0, "n2": 30.0, "n3": 90.0, "n4": 12.0}
    summaries = summarize(states, seconds, oldest=1)
    assert [s.state for s in summaries] == ["upgrade-required", "drain-required", "upgrade-done"]
    assert summaries[1].count == 2 and summaries[1].longest == 90.0 and summaries[1].oldest == ("n3",)
    assert [s.node for s in stuck_nodes(states, seconds, 20.0)] == ["n3", "n2"]  # upgrade-done is never stuck
    assert (duration_text(4.25), duration_text(42), duration_text(185), duration_text(3725)) == (
        "4.2s",
        "42s",
        "3m 05s",
        "1h 02m",
    )


def test_few_nodes_print_each_change_with_the_time_spent_in_the_state_left() -> None:
    clock, err = Clock(), io.StringIO()
    printer = RolloutPrinter(err, stall_window=600, clock=clock)
    printer.show(status({"gpu-1": "upgrade-required", "gpu-2": "upgrade-done"}, {"gpu-1": 3.0, "gpu-2": 50.0}))
    clock.now += 40
    printer.show(status({"gpu-1": "drain-required", "gpu-2": "upgrade-done"}, {"gpu-1": 0.5, "gpu-2": 90.0}))
    clock.now += 1
    printer.show(status({"gpu-1": "drain-required", "gpu-2": "upgrade-done"}, {"gpu-1": 1.5, "gpu-2": 91.0}))
    lines = err.getvalue().splitlines()
    assert lines == [
        "rollout: progressing: driver pods ready: nvidia-driver-daemonset 1/2",
        "  node gpu-1: upgrade-required (for 3.0s)",
        "  node gpu-2: upgrade-done (for 50s)",
        # entered at 997, left at 1039.5: 42.5 s in upgrade-required
        "  node gpu-1: upgrade-required → drain-required (after 42s in upgrade-required)",
    ]


def test_five_thousand_nodes_get_a_throttled_summary_per_state() -> None:
    clock, err, out = Clock(), io.StringIO(), io.StringIO()
    printer = RolloutPrinter(err, stall_window=600, json_out=out, refresh=10, clock=clock)
    nodes = [f"gpu-{i:04d}" for i in range(5000)]
    for step in range(60):  # 60 snapshots, 0.5 s apart: nodes keep moving
        done = step * 50
        states = {n: "upgrade-done" if i < done else "drain-required" if i < done + 50 else "upgrade-required"
                  for i, n in enumerate(nodes)}  # fmt: skip
        seconds = {n: float(200 - i % 200) for i, n in enumerate(nodes)}
        printer.show(status(states, seconds))
        clock.now += 0.5
    text = err.getvalue()
    assert text.count("rollout: progressing:") == 3  # 30 s of changes: one summary each 10 s, not 60 × 5,000 lines
    assert len(text.splitlines()) <= 3 * 6
    first = text.split("rollout: ")[1]
    assert "upgrade states of 5,000 node(s):" in first
    assert "upgrade-required           4,950  longest  3m 20s  gpu-0200, gpu-0400, gpu-0600 …" in first
    assert "drain-required                50  longest  3m 20s  gpu-0000, gpu-0001, gpu-0002 …" in first
    records = [json.loads(line)["rollout"] for line in out.getvalue().splitlines()]
    assert len(records) == 3 and len(records[0]["nodes"]) == 5000
    assert records[0]["nodes"]["gpu-0001"] == {"state": "drain-required", "seconds": 199.0}
    assert records[0]["states"][0]["oldest"] == ["gpu-0200", "gpu-0400", "gpu-0600"][:OLDEST]


def test_a_node_stuck_longer_than_the_stall_window_is_named_once() -> None:
    clock, err, out = Clock(), io.StringIO(), io.StringIO()
    printer = RolloutPrinter(err, stall_window=300, json_out=out, clock=clock)
    for waited in (100.0, 301.0, 302.0):
        printer.show(status({"gpu-7\x1b[2J": "drain-required", "gpu-8": "upgrade-done"}, {"gpu-7\x1b[2J": waited}))
        clock.now += 1
    stuck = [ln for ln in err.getvalue().splitlines() if ln.startswith("!")]
    assert stuck == [
        "! node gpu-7\\x1b[2J has been in drain-required for 5m 01s (longer than the stall window, 5m 00s)"
    ]
    last = json.loads(out.getvalue().splitlines()[-1])["rollout"]
    assert last["stuck"] == [{"node": "gpu-7\x1b[2J", "state": "drain-required", "seconds": 301.0}]


def test_a_stalled_rollout_names_the_nodes_longest_in_one_state() -> None:
    states = {"gpu-1": "drain-required", "gpu-2": "upgrade-done", "gpu-3": "wait-for-jobs-required"}
    stalled = stalled_message(status(states, {"gpu-1": 700.0, "gpu-2": 900.0, "gpu-3": 650.0}), 600)
    assert stalled == (
        "stalled for 600s: driver pods ready: nvidia-driver-daemonset 1/2; longest in one upgrade state: "
        "gpu-1 in drain-required for 11m 40s, gpu-3 in wait-for-jobs-required for 10m 50s"
    )


def test_upgrade_on_the_demo_shows_node_states_and_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    argv = ["upgrade", "--driver", "580.126.20", "--demo", "existing-install-plain", "--yes", "-o", "json"]
    code = main([*argv, "--backup-dir", str(tmp_path), "--wait-timeout", "60"])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    records = [json.loads(line)["rollout"] for line in out.splitlines() if line.startswith('{"rollout"')]
    assert records and records[-1]["done"] and records[-1]["phase"] == "ready"
    seen = {node["state"] for record in records for node in record["nodes"].values()}
    assert seen <= set(UPGRADE_STATES) and "upgrade-done" in seen
    assert all(isinstance(node["seconds"], float) for node in records[-1]["nodes"].values())
    assert "  node gpu-a100-0" in err and "rollout: ready:" in err
    assert "+" in err  # with -o json the diff goes to stderr: stdout stays JSON
