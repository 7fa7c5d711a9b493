"""The TUI on a cluster where the driver already runs: the Helm path, the upgrade plan, the upgrade policy.

Walks ``gpu-wizard --demo existing-install`` (a ClusterPolicy a Helm release owns) and
``existing-install-plain`` (the same policy made by hand) at 80×24 through Pilot, over the demo's
real HTTPS API. The Apply step must say that Helm owns the policy and offer the release's values and
the ``helm upgrade`` (the CLI's own files), apply directly only after a confirmation naming the risk,
and show the upgrade plan per node group.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from screens.dialogs import ConfirmDialog
from screens.widgets.policyform import UpgradePolicyDialog
from tests.helpers.tui import demo_app, next_to, on_step, set_field, walk_to
from tests.snapshots.plugin import Snapshot, screen_text, wait_for

SCENARIOS = Path(__file__).resolve().parent.parent / "assets" / "scenarios"


async def _to_apply(pilot: Any, version: str = "580.126.20") -> None:
    """Connect, change the driver version (the upgrade), preview, and stop on Apply."""
    app = pilot.app
    await walk_to(pilot, "nodes", "mode", "driver")
    await set_field(pilot, "driver-version", version)
    await next_to(pilot, "paths")
    await next_to(pilot, "preview")
    await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
    await next_to(pilot, "apply")


def _plan_loaded(app: Any) -> bool:
    view = app.screen.query_one("#upgrade-plan")
    return on_step(app, "apply") and view.report is not None


async def test_a_helm_owned_policy_gets_values_and_the_helm_command(tui_env: Path, snapshot: Snapshot) -> None:
    app = demo_app(tui_env, "existing-install")
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_apply(pilot)
        await wait_for(pilot, lambda: _plan_loaded(app), 30, "the upgrade plan")
        await snapshot.check(pilot, "apply-helm")
        text = screen_text(app)
        assert "Helm release gpu-operator" in text and "helm upgrade" in text
        assert "Apply directly…" in text
        assert app.screen.blocker() == "save the Helm values (or apply directly)"
        before = app.state.preflight.cluster_policy["spec"]["driver"]["version"]

        app.screen.query_one("#helm-save").press()
        await wait_for(pilot, lambda: app.screen.blocker() == "", what="the values saved")
        change = app.screen._helm
        assert change.values_path.stat().st_mode & 0o777 == 0o600
        written = YAML(typ="safe").load(change.values_path.read_text())
        assert written["driver"]["version"] == "580.126.20"
        argv = shlex.split(change.command)
        assert argv[:6] == ["helm", "upgrade", "gpu-operator", "nvidia/gpu-operator", "-n", "gpu-operator"]
        assert argv[-3:] == ["--reuse-values", "-f", str(change.values_path)]
        app.screen.query_one("#helm-copy").press()
        await wait_for(pilot, lambda: bool(app.clipboard), what="the copy")
        assert app.clipboard == change.command

        # a direct apply is possible, after a confirmation that names the risk; cancelling sends nothing
        app.screen.query_one("#apply").press()
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the override confirmation")
        dialog = app.screen
        assert "bypassing Helm" in screen_text(app) and "reverts this change" in dialog.body
        await pilot.press("escape")
        await wait_for(pilot, lambda: on_step(app, "apply"), what="back on Apply")
        assert app.state.applied is None
        gateway = app.state.cluster.gateway
        live = await gateway.get_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        assert live["spec"]["driver"]["version"] == before

        # confirmed: applied directly (the TUI's --override-helm), with the backup as always
        app.screen.query_one("#apply").press()
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the override confirmation")
        await pilot.press("tab", "enter")  # focus starts on Cancel
        await wait_for(pilot, lambda: app.state.applied is not None, 30, "the direct apply")
        live = await gateway.get_custom("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        assert live["spec"]["driver"]["version"] == "580.126.20" and app.state.applied.backup_path.exists()
    snapshot.verify()


async def test_the_upgrade_plan_shows_groups_evictions_and_duration(tui_env: Path, snapshot: Snapshot) -> None:
    app = demo_app(tui_env, "existing-install-plain")
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_apply(pilot)
        await wait_for(pilot, lambda: _plan_loaded(app), 30, "the upgrade plan")
        report = app.screen.query_one("#upgrade-plan").report
        assert report.plan.changing_nodes and report.plan.evictions
        shown = str(app.screen.query_one("#upgrade-text").render())
        assert "Upgrade plan: driver 570.195.03 → 580.126.20" in shown
        assert "→" in shown and "Estimated duration: about" in shown
        assert "GPU workloads evicted" in shown
        assert "Helm" not in screen_text(app)  # nobody owns it: applied as before
        assert app.screen.query_one("#apply").label.plain == "Apply…"
        app.screen.query_one("#upgrade-plan").scroll_visible(animate=False, top=True)
        await snapshot.check(pilot, "apply-upgrade-plan")

        # the upgrade policy, edited in its form: a bad value names the field and stays; a good one re-plans
        app.screen.query_one("#edit-policy").press()
        await wait_for(pilot, lambda: isinstance(app.screen, UpgradePolicyDialog), what="the policy form")
        await snapshot.check(pilot, "apply-upgrade-policy")
        await set_input(pilot, "policy-unavailable", "0%")
        await set_input(pilot, "policy-parallel", "3")
        await pilot.press("enter")
        await pilot.pause()
        error = str(app.screen.query_one("#policy-error").render())
        assert error.startswith("✗ upgradePolicy.maxUnavailable: '0%' is not a node count of 1 or more")
        await set_input(pilot, "policy-unavailable", "2")
        await pilot.press("enter")
        await wait_for(pilot, lambda: on_step(app, "apply"), what="the form to close")
        await wait_for(pilot, lambda: _plan_loaded(app) and app.state.prepared is not None, 30, "the new plan")
        policy = app.screen.query_one("#upgrade-plan").report.plan.policy
        assert (policy.max_parallel_upgrades, policy.max_unavailable) == (3, "2")
        assert app.state.get("driver.upgradePolicy.maxParallelUpgrades") == 3
        assert "+      maxParallelUpgrades: 3" in app.state.prepared.diff
        assert "2 at a time" in str(app.screen.query_one("#upgrade-text").render())
    snapshot.verify()


async def set_input(pilot: Any, widget_id: str, value: str) -> None:
    """Replace an input's text as a user would."""
    pilot.app.screen.query_one(f"#{widget_id}").focus()
    await pilot.press("home", "ctrl+k", *value)


async def test_an_olm_owned_policy_is_applied_with_what_olm_may_do_said(tui_env: Path) -> None:
    """OLM created the policy (an owner reference to a ClusterServiceVersion): applied directly, the risk said."""
    scenario = YAML(typ="safe").load((SCENARIOS / "existing-install-plain.yaml").read_text())
    scenario["name"] = "existing-install-olm"
    scenario["operator"]["cluster_policy"]["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "name": "gpu-operator-certified.v26.3.3",
            "uid": "0d3c6f0e-1111-4a5b-9c2d-3e4f5a6b7c8d",
        }
    ]
    path = tui_env / "existing-install-olm.yaml"
    with path.open("w") as out:
        YAML(typ="safe").dump(scenario, out)
    app = demo_app(tui_env, str(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_apply(pilot)
        summary = str(app.screen.query_one("#apply-summary").render())
        assert "! owner: OLM created ClusterPolicy cluster-policy from ClusterServiceVersion" in summary
        assert app.screen.query_one("#apply").label.plain == "Apply…"  # no Helm path: applied as usual
        app.screen.query_one("#apply").press()
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        assert "an operator upgrade through OLM may replace the object" in app.screen.body
