"""The ``upgrade-in-progress`` demo: a driver upgrade caught half-way, and what gpu-wizard says about it.

Seeding stops each GPU node in one upgrade state (the simulated upgrade controller walks it there,
nothing is written by hand); once the demo runs the nodes go on by the clock, and the failed node
stays failed for its real reason. ``gpu-wizard upgrade --dry-run`` and the TUI's Apply step say
that an upgrade is under way (per state, the failed node named) and what applying now would do.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as _cli
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import wait_for
from wizard.demo.cluster import DemoCluster
from wizard.engine.upgrade import UPGRADE_STATES

STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
FAILED = "gpu-h100-01"


def _states(store: Any) -> dict[str, str]:
    return {
        n["metadata"]["name"]: n["metadata"]["labels"][STATE_LABEL]
        for n in store.iter_objects("nodes")
        if STATE_LABEL in n["metadata"].get("labels", {})
    }


def _driver_waiting(store: Any, node: str) -> str:
    for pod in store.iter_objects("pods"):
        if pod["spec"].get("nodeName") == node and pod["metadata"]["name"].startswith("nvidia-driver-daemonset"):
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                if status["name"] == "nvidia-driver-ctr":
                    return str(((status.get("state") or {}).get("waiting") or {}).get("reason") or "running")
    return ""


def test_seeding_stops_one_node_in_each_state_and_the_demo_goes_on_by_the_clock() -> None:
    demo = DemoCluster("upgrade-in-progress")
    states = _states(demo.store)
    assert sorted(states.values(), key=UPGRADE_STATES.index) == list(UPGRADE_STATES)  # one node per state
    assert states[FAILED] == "upgrade-failed" and _driver_waiting(demo.store, FAILED) == "CrashLoopBackOff"
    cordoned = {n["metadata"]["name"] for n in demo.store.iter_objects("nodes") if n["spec"].get("unschedulable")}
    assert "gpu-a100-05" in cordoned and "gpu-a100-09" not in cordoned  # drain-required is cordoned; not yet started

    now = [0.0]
    upgrades = demo.sim.upgrades
    upgrades.clock = lambda: now[0]
    upgrades.release(45.0)  # as after seeding, on the fake clock

    async def ticks() -> None:
        for _ in range(4):
            demo.sim.wake()
            await demo.sim.tick()

    asyncio.run(ticks())
    assert _states(demo.store) == states  # frozen until each state's time is up
    assert upgrades.wake_in() == 45.0
    for _ in range(14):  # then every node walks on, one state per 45 s, to the end
        now[0] += 46.0
        asyncio.run(ticks())
    final = _states(demo.store)
    assert final.pop(FAILED) == "upgrade-failed"  # its cause is still there: it stays failed
    assert set(final.values()) == {"upgrade-done"}, final


def test_upgrade_dry_run_says_what_is_under_way_and_a_second_upgrade_changes_nothing(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("upgrade-in-progress")
    common = ["--kubeconfig", str(demo.kubeconfig_path), "--backup-dir", str(tmp_path / "b")]
    code, out, err = _cli(capsys, "upgrade", "--driver", "580.126.20", "--dry-run", *common)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith(
        "Upgrade in progress to driver 580.126.20: 1 of 10 GPU node(s) done · upgrade-required 1"
    )
    assert "upgrade-failed 1" in lines[1]
    assert lines[2].startswith(f"  upgrade-failed: {FAILED}: driver container CrashLoopBackOff, exit code 1 running ")
    assert "Applying now changes nothing in flight" in out and "failed nodes stay failed" in out
    assert "still to be evicted on gpu-a100-08: ml-team/train-llm-0" in out
    # applying the same version again (the state the upgrade left): nothing to change, nothing written
    backups = tmp_path / "b"
    code, out, err = _cli(capsys, "upgrade", "--driver", "580.126.20", "--yes", "--no-wait", *common)
    assert code == 0 and "nothing to upgrade" in err and not backups.exists(), err


async def test_the_tui_says_an_upgrade_is_under_way(tui_env: Path) -> None:
    app = demo_app(tui_env, "upgrade-in-progress")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await next_to(pilot, "apply")
        view = app.screen.query_one("#upgrade-plan")
        await wait_for(pilot, lambda: view.report is not None, 30, "the upgrade plan")
        shown = str(app.screen.query_one("#upgrade-text").render())
        assert "Upgrade in progress to driver 580.126.20: 1 of 10 GPU node(s) done" in shown
        assert f"upgrade-failed: {FAILED}" in shown and "Applying now changes nothing in flight" in shown
