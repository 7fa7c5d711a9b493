"""Connect and Nodes say what the operator is doing before anything is planned (issue 25 item 8).

Found walking ``kernel-drift`` and ``upgrade-in-progress``: Connect showed a green ✓ for a ``notReady``
ClusterPolicy, and nothing on Connect or Nodes mentioned the upgrade under way, its failed node or a
driver pod stuck pulling until Apply or Verify. Each finding here is worded by the function Apply or
Verify words it with (``policy_health``, ``InProgress.summary``, ``driver_pod_problems``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from screens.widgets.checks import CheckList
from tests.helpers.tui import connected, demo_app, next_to
from tests.snapshots.plugin import wait_for
from wizard.cluster.core.operator_status import policy_checks
from wizard.engine.plan import Plan


def shown(app: Any, widget_id: str) -> str:
    """A check list's text, wrapped lines joined."""
    return " ".join(str(app.screen.query_one(f"#{widget_id}", CheckList).render()).split())


async def findings_on_connect_and_nodes(pilot: Any, *texts: str) -> tuple[str, str]:
    app = pilot.app
    await connected(pilot)
    await wait_for(pilot, lambda: all(t in shown(app, "preflight") for t in texts), 30, f"{texts} on Connect")
    on_connect = shown(app, "preflight")
    await next_to(pilot, "nodes")
    await wait_for(pilot, lambda: all(t in shown(app, "live-findings") for t in texts), 30, f"{texts} on Nodes")
    return on_connect, shown(app, "live-findings")


async def test_kernel_drift_a_not_ready_policy_and_a_pull_error_show_on_connect_and_nodes(tui_env: Path) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        pulling = "driver-pod gpu-h100-03 driver container ImagePullBackOff"
        on_connect, on_nodes = await findings_on_connect_and_nodes(pilot, pulling)
        policy = app.state.preflight.cluster_policy
        verify_words = policy_checks(Plan.model_validate({"version": 1, "mode": "preinstalled"}), policy, [])[0].message
        assert "is notReady" in verify_words
        for shown_there in (on_connect, on_nodes):
            assert f"! cluster-policy live ClusterPolicy {verify_words}" in shown_there
        assert "✓ cluster-policy" not in on_connect


async def test_upgrade_in_progress_shows_done_of_total_and_the_failed_node_on_connect_and_nodes(
    tui_env: Path,
) -> None:
    app = demo_app(tui_env, "upgrade-in-progress")
    async with app.run_test(size=(80, 24)) as pilot:
        upgrade = "Upgrade in progress to driver 580.126.20:"
        failed = "upgrade-failed gpu-h100-01 driver container CrashLoopBackOff"
        on_connect, on_nodes = await findings_on_connect_and_nodes(pilot, upgrade, failed)
        assert "of 10 GPU node(s) done" in on_connect and "of 10 GPU node(s) done" in on_nodes


async def test_a_settled_install_has_no_live_findings(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await wait_for(pilot, lambda: "✓ cluster-policy" in shown(app, "preflight"), 30, "the policy's state")
        await next_to(pilot, "nodes")
        await pilot.pause(0.5)
        assert app.state.live_findings == [] and not app.screen.query_one("#live-scroll").display
