"""The Apply step tells the truth on every visit: a second apply, a plan the cluster already holds, a failed rollout.

Pilot at 80×24 against the demo cluster (its real HTTPS API, nothing mocked): "What will change"
always describes the plan on screen, "rolling out" appears only once this plan was sent, Verify is
reachable whenever the live objects hold the plan, and a failed rollout's advice comes from the
diagnosis (the known cause and its fix; a rollback only when the apply changed something).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from screens.dialogs import ConfirmDialog
from tests.helpers.tui import (
    apply_and_roll_out,
    back_to,
    demo_app,
    next_to,
    on_step,
    set_field,
    verified,
    walk_to,
)
from tests.snapshots.plugin import screen_text, wait_for


async def _preview_then_apply(pilot: Any) -> None:
    app = pilot.app
    await next_to(pilot, "paths")
    await next_to(pilot, "preview")
    await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
    await next_to(pilot, "apply")


async def _upgrade_to_apply(pilot: Any, version: str = "580.126.20") -> None:
    """Connect, set the driver version (an upgrade of the running policy), preview, and stop on Apply."""
    await walk_to(pilot, "nodes", "mode", "driver")
    await set_field(pilot, "driver-version", version)
    await _preview_then_apply(pilot)


async def _defaults_to_apply(pilot: Any) -> None:
    """Every step's defaults (on an installed cluster: what runs) up to Apply."""
    app = pilot.app
    await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")
    await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
    if app.screen.blocker():  # a blocking finding holds Next even where the live objects run the plan's driver
        await pilot.click("#override")
    await next_to(pilot, "apply")


async def test_a_second_apply_starts_from_the_plan_on_screen(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install-plain")
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        await apply_and_roll_out(pilot, expect_warning=None)
        assert "✓ verified" in await verified(pilot)
        first = app.state.applied

        await back_to(pilot, "driver")
        await set_field(pilot, "driver-version", "570.195.03")
        await _preview_then_apply(pilot)
        await pilot.pause(0.5)  # a follower of the old apply, had one started, would have said so by now
        text = screen_text(app)
        assert "What will change" in text and "update ClusterPolicy/cluster-policy" in text
        assert "What was sent" not in text and str(first.backup_path.name) not in text  # not the first apply's
        rollout = str(app.screen.query_one("#rollout-state").content)  # below the fold once warnings stand above it
        assert "not started" in rollout and "rolling out" not in rollout and "rolling out" not in text
        assert app.screen.blocker() == "apply first (nothing is sent before you confirm)"

        await apply_and_roll_out(pilot, expect_warning=None)  # this plan, sent: now it is followed
        assert app.state.applied is not first and app.screen.blocker() == ""
        assert "What was sent" in screen_text(app)


async def test_a_plan_the_cluster_holds_reaches_verify_and_a_failure_gets_its_cause(tui_env: Path) -> None:
    """kernel-drift as installed: nothing to send, Verify reachable, the live rollout's failure explained."""
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")  # the defaults: what runs
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        diff = app.state.prepared.diff
        assert diff and "-    version" not in diff  # at most the upgrade policy's podDeletion
        text = screen_text(app)
        assert "Verify needs no apply" not in text  # the diff is not empty (defect 11)
        verdict = str(app.screen.query_one("#dry-run").content)
        assert "the driver image stays; the rest takes effect only once applied" in verdict, verdict
        # gpu-h100-03's missing image, labelled blocking, holds Next here too (defect 12)
        assert "1 blocking finding: fix or tick 'apply anyway'" in app.screen.blocker()
        await pilot.press("ctrl+n")
        await pilot.pause(0.3)
        assert on_step(app, "preview")
        await pilot.click("#override")
        await next_to(pilot, "apply")
        assert app.screen.blocker() == ""  # Verify reachable: it looks at what runs
        text = screen_text(app)
        assert "no driver image changes" not in text and "the changes above need an apply" in text
        rollout = app.screen.query_one("#rollout-state")
        await wait_for(pilot, lambda: "Cause on gpu-h100-03" in str(rollout.content), 60, "the diagnosis advice")
        said = str(rollout.content)
        assert "nothing sent" in said.splitlines()[0], said
        assert "kernel drift" in said and "gpu-wizard check-kernel 5.15.0-1063-nvidia" in said, said
        assert "mirror it where the node pulls from: `gpu-wizard mirror`" in said, said  # a missing tuple: or mirror it
        assert "rollback" not in said and "Driver step" not in said, said  # nothing was applied; the cause is known
        await next_to(pilot, "verify")


async def test_the_confirmation_fits_80x24_and_names_the_evicted_workloads(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install")  # Helm owns the policy; GPU jobs run on the nodes
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        view = app.screen.query_one("#upgrade-plan")
        await wait_for(pilot, lambda: view.report is not None, 30, "the upgrade plan")
        app.screen.query_one("#apply").press()
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the confirmation")
        await pilot.pause()
        text = screen_text(app)
        assert "Helm release gpu-operator owns this ClusterPolicy" in text
        assert "Evicts GPU workloads:" in text and "ml-team/" in text
        assert "Backup of the live objects first" in text
        assert "Apply directly" in text and "Cancel" in text
        body = app.screen.query_one(".dialog-body")
        assert body.max_scroll_y == 0, f"the confirmation scrolls by {body.max_scroll_y} lines:\n{text}"
        await pilot.press("escape")


async def test_verify_after_saved_helm_values_says_to_run_the_helm_upgrade_first(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install")  # Helm owns the live policy (driver 570.195.03)
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        app.screen.query_one("#helm-save").press()
        await wait_for(pilot, lambda: app.screen.blocker() == "", what="the values saved")
        command = app.state.helm_command
        assert command.startswith("helm upgrade gpu-operator")
        await next_to(pilot, "verify")
        await wait_for(pilot, lambda: app.state.checks and not app.screen._verifying, 60, "verification")
        text = " ".join(screen_text(app).split())  # the words as shown, wrapped at 80 columns
        assert "✗ not verified: the live ClusterPolicy cluster-policy still asks for driver 570.195.03" in text
        assert "→ run the saved helm upgrade first, then Run again: helm upgrade gpu-operator" in text
        assert "check(s) failed" not in text and "rendered another image" not in text
        assert not any(c.node for c in app.state.checks)  # no node compared with an image nobody asked for
        summary = str(app.screen.query_one("#verify-summary").content)
        assert command in summary


async def test_copy_saves_the_values_the_command_names_and_claims_no_clipboard(tui_env: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TMUX", "/tmp/tmux-0/default,1,0")  # inside tmux, which ignores OSC 52 by default
    app = demo_app(tui_env, "existing-install")
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        await wait_for(pilot, lambda: app.screen._helm is not None, what="the Helm values")
        values = app.screen._helm.values_path
        assert not values.exists()
        app.screen.query_one("#helm-copy").press()
        await wait_for(pilot, lambda: bool(app._notifications), what="the toast")
        said = " ".join(n.message for n in app._notifications)
        assert values.exists() and str(values) in app.clipboard  # the file the copied command names
        assert "on the clipboard" not in said and "set-clipboard on" in said
        assert app.screen.blocker() == ""  # saved: the change goes through helm; Verify says if it has not run


async def test_ctrl_q_during_a_rollout_asks_first_and_leaves_a_closing_line(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install-plain")
    app.step_delay = 0.5  # a rollout that takes a while, as a real one does
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.state.applied is not None, 30, "the apply")
        await wait_for(pilot, lambda: on_step(app, "apply") and app.screen.busy() != "", 10, "the rollout")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the quit question")
        assert "rolling out the driver" in screen_text(app) and "carries on" in screen_text(app)
        await pilot.press("enter")  # focus starts on Stay
        await wait_for(pilot, lambda: on_step(app, "apply"), what="back on Apply")
        assert app.is_running
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the quit question")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: not app.is_running, what="the wizard closed")
    message = app.closing_line
    assert message.startswith("gpu-wizard: quit at Apply while the operator is rolling out the driver"), message


async def test_an_upgrade_failed_on_the_os_tag_is_advised_the_nvidiadriver_crd(tui_env: Path) -> None:
    """upgrade-in-progress as it runs: gpu-h100-01 (Ubuntu 24.04) got the ubuntu22.04 image; no rollback of nothing."""
    app = demo_app(tui_env, "upgrade-in-progress")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")  # the defaults: what runs
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        assert "✓ server dry-run accepted: unchanged ClusterPolicy/cluster-policy" in screen_text(app)  # not "update"
        await next_to(pilot, "apply")
        rollout = app.screen.query_one("#rollout-state")
        await wait_for(pilot, lambda: "Cause on" in str(rollout.content), 60, "the diagnosis advice")
        said = " ".join(str(rollout.content).split())
        assert "Cause on gpu-h100-01: the driver image is built for another OS than the node runs." in said, said
        assert "Fix: Use the NVIDIADriver CRD (driver.useNvidiaDriverCRD: true" in said, said
        assert "rollback" not in said, said  # nothing was applied in this visit: nothing to undo
        assert app.screen.blocker() == ""


async def test_the_ready_toast_comes_once_per_apply_not_per_visit(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install-plain")
    told: list[str] = []
    notify = app.notify
    app.notify = lambda message, **kw: (told.append(str(kw.get("title", ""))), notify(message, **kw))[1]  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        await apply_and_roll_out(pilot, expect_warning=None)
        await wait_for(pilot, lambda: "Rollout" in told, what="the ready toast")
        await next_to(pilot, "verify")
        await back_to(pilot, "apply")
        await wait_for(pilot, lambda: app.screen._rollout is not None and app.screen._rollout.done, 30, "rollout")
        await pilot.pause(0.3)
        assert told.count("Rollout") == 1, told


async def test_a_failed_rollout_of_an_unsupported_branch_names_the_supported_ones(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")  # operator v26.7.0: branches 610, 595, 580, 535
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-version", "570.172.08")  # no such tag either: the pull fails
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot, expect_warning=None)
        rollout = app.screen.query_one("#rollout-state")
        await wait_for(pilot, lambda: "→ Or undo this apply" in str(rollout.content), 60, "the diagnosis advice")
        said = " ".join(str(rollout.content).split())
        assert "→ Driver branch 570 is not one operator v26.7.0 supports (610, 595, 580, 535)" in said, said
        assert said.index("Driver branch 570") < said.index("Cause on")  # the branch first: no node fix helps it
        assert "gpu-wizard rollback --backup" in said  # the apply created the policy: undoing it changes something


async def test_a_new_upgrade_policy_keeps_verify_reachable_and_the_live_rollout_shown(tui_env: Path) -> None:
    from screens.widgets.upgradeplan import UpgradePlanView

    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        await _defaults_to_apply(pilot)
        rollout = app.screen.query_one("#rollout-state")
        await wait_for(pilot, lambda: "Cause on gpu-h100-03" in str(rollout.content), 60, "the diagnosis advice")
        before = app.state.prepared
        view = app.screen.query_one(UpgradePlanView)
        view.post_message(UpgradePlanView.PolicyChanged({"autoUpgrade": True, "maxParallelUpgrades": 2}))
        await wait_for(pilot, lambda: app.state.prepared is not before, 30, "the new dry-run")
        await wait_for(pilot, lambda: "Cause on gpu-h100-03" in str(rollout.content), 60, "the live rollout again")
        assert app.screen.blocker() == ""


def test_a_changed_answer_forgets_the_saved_helm_command() -> None:
    """Verify names the saved helm upgrade to run first: not once the answers it carried have changed."""
    from screens.state import WizardState

    state = WizardState()
    state.helm_command = "helm upgrade gpu-operator nvidia/gpu-operator --reuse-values -f values.yaml"
    state.set("driver.version", "580.126.20")
    assert state.helm_command == ""


async def test_an_apply_rolled_back_follows_no_rollout(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install-plain")
    async with app.run_test(size=(80, 24)) as pilot:
        await _upgrade_to_apply(pilot)
        faults = app._demo_cluster.faults  # the API server refuses every server-side apply from now on
        faults.only, faults.methods, faults.error_rate = ["/apis/nvidia.com"], ["PATCH"], 1.0
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.state.applied is not None, 60, "the apply")
        await pilot.pause(0.5)
        assert not app.state.applied.ok
        said = " ".join(screen_text(app).split())
        assert "✗ not applied:" in said and "not started: nothing was applied" in said, said
        assert app.screen.blocker() == "apply first (nothing is sent before you confirm)"
