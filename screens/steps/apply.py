"""Step 7, Apply: confirm (naming cluster, context and changes), back up, apply, follow the rollout.

Nothing is sent before a confirmation dialog (fitting 80×24, :mod:`screens.apply_text`) that names the
cluster, what a Helm release or OLM would do, the GPU workloads evicted, the warnings and every object
created or changed. ``Cluster.apply`` backs up the live objects first (the path is shown), then a worker
follows ``Cluster.rollout`` (:mod:`screens.widgets.rolloutview`) until the operator reports ready or a
failure, whose advice comes from the diagnosis. The workers are bound to this screen; an answers
replay never applies by itself.

One apply state per visit: an earlier apply is shown only while the plan on screen is the one it sent
(``state.applied_for``); another plan starts "not started". When the live objects already ask for the
plan's driver (``ApplyPlan.holds_driver``), nothing needs sending: their rollout is shown and Verify is
reachable without an apply.

The ways through Helm (installing the operator, a Helm-owned change) are the step's base,
:class:`screens.steps.apply_helm.HelmPaths`. When a Helm release owns the live ClusterPolicy, the default is the release's values and the
``helm upgrade`` that carries them (composed and saved by ``wizard.cluster.facade.helm_change``,
the CLI's own path): with ``helm`` on PATH, **Run helm upgrade…** carries it out as ``gpu-wizard apply``
does (backup, ``helm upgrade`` of the owning release, the leftover driver DaemonSets deleted, the rollout
followed); a direct apply would be reverted by the next ``helm upgrade``, so it needs a confirmation naming
that risk. When a policy already runs, the upgrade plan (images per node group,
evictions, duration) is shown under the change (:mod:`screens.widgets.upgradeplan`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Button, Checkbox, Label, Static

from screens.apply_text import changes, warnings
from screens.host import SaveProgress
from screens.state import display_path
from screens.steps.apply_helm import HelmPaths
from screens.widgets.rolloutview import RolloutView
from screens.widgets.toggles import Tick
from screens.widgets.upgradeplan import UpgradePlanView
from wizard.engine.steps import VERIFY
from wizard.engine.upgradestates import UPGRADE_FAILED


class ApplyStep(HelmPaths):
    """Apply the plan and watch the operator roll it out."""

    NEXT_LABEL = "Verify ▶"

    DEFAULT_CSS = """
    #apply-summary { height: auto; }
    #apply-row { height: 1; margin-top: 1; }
    #apply-row > Button { margin-right: 2; }
    #allow-unverified { display: none; }
    #apply-scroll { height: 1fr; }
    #helm-row { height: 1; margin-top: 1; display: none; }
    #helm-row > Button { margin-right: 2; }
    #helm-run { display: none; }
    #helm-values { height: auto; display: none; color: $text-muted; }
    """

    def compose_body(self) -> ComposeResult:
        # not a Tab stop of its own: it showed no focus, and its buttons and table scroll into view when focused
        with VerticalScroll(id="apply-scroll", can_focus=False):
            yield Label("What will change", classes="section -first", id="change-title")
            yield Static("", id="apply-summary")
            with Horizontal(id="apply-row"):
                yield Button("Apply…", id="apply", variant="warning", compact=True)
                yield Tick("apply although a host driver is unverified", id="allow-unverified", compact=True)
            with Horizontal(id="helm-row"):
                yield Button("Run helm upgrade…", id="helm-run", variant="warning", compact=True)
                yield Button("Save Helm values", id="helm-save", variant="primary", compact=True)
                yield Button("Copy helm command", id="helm-copy", compact=True)
            yield Static("", id="helm-values")
            yield Label("Rollout", classes="section")
            yield RolloutView(id="rollout")
            yield UpgradePlanView(id="upgrade-plan")

    def on_mount(self) -> None:
        self._rollout: Any = None
        self._helm: Any = None  # the HelmChange when a Helm release owns the live policy
        self._helm_saved = False
        self._advice: list[str] = []
        self._told_ready: bool | None = None
        """None: no apply on this visit (nothing to tell); False: applied here, not yet told it is ready."""
        state = self.state
        self.query_one("#allow-unverified").display = state.get("mode") == "preinstalled"
        self._owner = self._ownership()
        self._install: Any = self._operator_install()  # the OperatorInstall when no operator runs yet
        if self._install is not None:
            self.query_one("#apply", Button).label = "Install…"
        # one apply state per visit: an earlier apply is this visit's only when it sent the plan on screen
        # (Preview's dry-run of it); another plan starts from "not started", whatever was applied before
        self._sent = state.applied is not None and state.prepared is not None and state.applied_for is state.prepared
        self._summary()
        self.query_one("#apply", Button).focus()
        if self._owner.helm:
            self._show_helm()
        if state.preflight is not None and state.preflight.cluster_policy and state.cluster is not None:
            self.query_one(UpgradePlanView).load()
        if self._sent:
            self._applied_text()
            self.query_one("#apply", Button).label = "Apply again…"
        if (self._sent or self.live_holds_plan()) and state.cluster is not None:
            self.follow_rollout()  # this plan's rollout: sent now, or earlier (the live objects hold it)
        self.refresh_nav()

    def live_holds_plan(self) -> bool:
        """The live objects already ask for what Verify checks: Preview's dry-run found nothing to change, or
        nothing that decides a node's driver image (a new upgrade policy alone changes nothing Verify looks at)."""
        prepared = self.state.prepared
        return prepared is not None and prepared.ok and (not prepared.changed or prepared.holds_driver)

    def _summary(self) -> None:
        state = self.state
        info = state.info
        lines: list[str] = []
        if info is not None:
            where = "built-in demo cluster (simulated)" if info.demo else escape(info.server)
            lines.append(f"Cluster  [b]{escape(info.context)}[/] · {where}")
        if state.prepared is None:
            lines.append("[$error]✗ no server dry-run yet: go back to Preview[/]")
        elif self._install is not None:
            lines.append("[$warning]GPU Operator not installed:[/] gpu-wizard installs it with your choices")
            lines += [f"  {escape(line)}" for line in self._install.summary(images=False)]  # counted under Images
        elif not state.prepared.changed:
            lines.append(
                "[$success]✓ the live objects already hold this plan:[/] nothing to send; Verify checks what runs"
            )
        else:
            for change in changes(state.prepared) or ["nothing to change"]:
                lines.append(f"  • {escape(change)}")
            if self.live_holds_plan():  # the diff is not empty: those changes are not live until applied
                lines.append(
                    "[$warning]! the driver image stays, but the changes above need an apply:[/] "
                    "Verify now checks what runs without them"
                )
        if state.rendered is not None:
            from wizard.engine.image_lists import compact_summary

            lines.append(f"Images   {escape(compact_summary(state.rendered))} (Preview's Mirror plan lists each)")
        if self._install is None:  # an install changes no live object: nothing to back up
            lines.append(
                f"Backup   {escape(display_path(self.wizard.backup_dir))}/ (live objects, before anything changes)"
            )
        for text in warnings(state):
            lines.append(f"[$warning]! {escape(text)}[/]")
        why = self._owner.why_not_apply()
        if why:
            lines.append(f"[$warning]! owner: {escape(why)}[/]")
        self.query_one("#apply-summary", Static).update("\n".join(lines))

    # -- the upgrade policy -------------------------------------------------------------------

    def on_upgrade_plan_view_policy_changed(self, event: UpgradePlanView.PolicyChanged) -> None:
        """A new upgradePolicy: into the answers (validated), then render and dry-run again."""
        event.stop()
        self.state.set("driver.upgradePolicy", event.policy)  # the images stay (flow.py: no image changes with it)
        self.post_message(SaveProgress(self.STEP))
        self.redo_dry_run()

    @work(exclusive=True, group="dry-run", exit_on_error=False)
    async def redo_dry_run(self) -> None:
        """Render the changed plan and ask the server again (what Preview does), then show it all anew."""
        from wizard.engine.render import render

        state = self.state
        plan, facts = state.valid_plan(), state.facts
        if facts is None:
            return
        self.query_one("#apply", Button).disabled = True
        self.query_one("#apply-summary", Static).update("[$accent]… server dry-run of the new upgrade policy[/]")
        try:
            state.rendered = render(plan, facts)
            force = self._owner.dry_run_takes_fields
            state.prepared = await state.connected().prepare_apply(state.rendered, force_conflicts=force)
        finally:
            self.query_one("#apply", Button).disabled = False
        self._not_sent()
        self._summary()
        if self.live_holds_plan():
            self.follow_rollout()  # the live objects' own rollout, as on arrival
        if self._owner.helm:
            self._helm_saved = False  # the values changed: save them again
            self._show_helm()
        self.query_one(UpgradePlanView).load()
        self.refresh_nav()

    # -- apply ------------------------------------------------------------------------------

    @on(Button.Pressed, "#apply")
    def _apply_pressed(self) -> None:
        from screens.dialogs import ConfirmDialog

        state = self.state
        if not self._may_send():
            return
        where = self._where()
        if self._install is not None:
            from screens.apply_text import install_confirmation
            from wizard.cluster.facade import helm_binary

            asked = install_confirmation(
                where=where, install=self._install, helm=helm_binary() is not None, warnings=warnings(state)
            )
            self.app.push_screen(ConfirmDialog(asked.title, asked.body, yes=asked.yes, no="Cancel"), self._confirmed)
            return
        asked = self._confirmation()
        self.app.push_screen(ConfirmDialog(asked.title, asked.body, yes=asked.yes, no="Cancel"), self._confirmed)

    def _confirmed(self, yes: bool | None) -> None:
        if yes:
            self.apply()

    @work(exclusive=True, group="apply", exit_on_error=False)
    async def apply(self) -> None:
        """See :meth:`_apply_body`."""
        await self._apply_body()

    async def _apply_body(self) -> None:
        """Back up, apply, then follow the rollout (or install the operator with the plan's values, then follow)."""
        state = self.state
        if self._install is not None:
            await self._install_body()
            return
        self.workers.cancel_group(self, "rollout")  # the rollout followed so far is the one before this apply
        self.query_one("#apply", Button).disabled = True
        self.query_one(RolloutView).say("[$accent]… backing up and applying[/]")
        allow = self.query_one("#allow-unverified", Checkbox).value
        sending = state.prepared
        assert sending is not None  # Apply is offered only for a dry-run (blocker)
        try:
            state.applied = await state.connected().apply(
                sending, backup_dir=self.wizard.backup_dir, allow_unverified_preinstalled=allow
            )
        finally:
            self.query_one("#apply", Button).disabled = False
        self._applied_text()
        if not state.applied.ok:  # rolled back: the cluster is as before, nothing of this plan rolls out
            self.query_one(RolloutView).say("not started: nothing was applied")
            self.refresh_nav()
            return
        state.applied_for, self._sent, self._advice, self._told_ready = sending, True, [], False
        self.query_one("#apply", Button).label = "Apply again…"  # sent: "Apply…" read as not yet done
        self.post_message(SaveProgress(self.STEP))
        self.refresh_nav()
        self.follow_rollout()  # a worker of its own: a new upgrade policy can stop it, never the apply's writes

    def _not_sent(self) -> None:
        """The plan on screen changed (a new upgrade policy): nothing of it was sent, no rollout is followed."""
        self.workers.cancel_group(self, "rollout")
        self._sent, self._rollout, self._advice = False, None, []
        self.query_one("#change-title", Label).update("What will change")
        self.query_one("#apply", Button).label = "Apply directly…" if self._owner.helm else "Apply…"
        self.query_one(RolloutView).say("not started")

    @work(exclusive=True, group="rollout", exit_on_error=False)
    async def follow_rollout(self) -> None:
        """Follow this plan's rollout: after the apply, on coming back, or when the live objects hold the plan."""
        await self._follow()

    async def _follow(self) -> None:
        state = self.state
        self._rollout = None
        # closed at once on leaving (its watches end, its own frozen run ends), not whenever it is collected
        from screens.findings import prior_findings

        # the host findings known before apply go with the plan: a pod failing on such a node ends it at once
        rollout = state.connected().rollout(state.valid_plan(), prior=prior_findings(state), after_change=self._sent)
        async with contextlib.aclosing(rollout) as statuses:
            async for status in statuses:
                self._rollout = status
                self._show_rollout(status)
                self.refresh_nav()
                if status.done:
                    break
        if self._rollout is not None and self._rollout.phase == "ready":
            if self._told_ready is False:  # once, for the apply made on this visit (a revisit was told before)
                self._told_ready = True
                self.notify("The operator reports the driver ready. Verify next.", title="Rollout")
            self.post_message(SaveProgress(VERIFY.name))
        elif self._rollout is not None and self._rollout.phase == "failed":
            await self._diagnose(self._rollout)
        view = self.query_one(UpgradePlanView)
        if view.display and self._sent:  # the plan read before the apply is stale now: read what runs after it
            view.load()

    async def _diagnose(self, status: Any) -> None:
        """A failed rollout: why, from the failing nodes' logs and events, and what fixes it (the advice)."""
        from screens.apply_text import branch_advice, failure_advice
        from wizard.cluster.errors import ClusterError

        failed = {pod.node for pod in status.pods if pod.reason and pod.node}
        failed |= {node for node, value in status.upgrade_states.items() if value == UPGRADE_FAILED}
        self._advice = ["[$accent]… diagnosing the failing nodes (driver logs, events)[/]"]
        self._show_rollout(status)
        found = []
        try:
            async for check in self.state.connected().diagnose(self.state.valid_plan(), nodes=sorted(failed) or None):
                found.append(check)
        except ClusterError as exc:
            self._advice = [escape(f"→ the diagnosis could not run: {exc.message}")]
        else:
            branch = branch_advice(self.state.valid_plan())
            advice = failure_advice(found, undo=self._undo_command(), branch=branch, step=status.fix_step)
            self._advice = [escape(line) for line in advice]
        self._show_rollout(status)

    def _undo_command(self) -> str:
        """The rollback of this visit's apply, when it changed something ("" otherwise: a no-op undoes nothing)."""
        applied, sent = self.state.applied, self.state.applied_for
        if not self._sent or applied is None or sent is None or not applied.ok or not sent.changed:
            return ""
        if applied.objects and applied.objects[0].startswith("helm release"):
            return ""  # an install: nothing to roll back to (helm uninstall removes the operator)
        if helm := self._helm_undo():
            return helm
        return f"gpu-wizard rollback --backup {display_path(applied.backup_path)}"

    def _show_rollout(self, status: Any) -> None:
        self.query_one(RolloutView).show(status, sent=self._sent, advice=self._advice)

    def busy(self) -> str:
        if any(w.node is self and w.group == "apply" and w.is_running for w in self.workers):
            return "The apply is being written (backup, then each object)"
        rollout = getattr(self, "_rollout", None)
        if getattr(self, "_sent", False) and (rollout is None or not rollout.done):
            return "The operator is rolling out the driver"
        return ""

    def blocker(self) -> str:
        state = self.state
        if getattr(self, "_sent", False):
            rollout = getattr(self, "_rollout", None)
            if rollout is None or not rollout.done:
                return "the operator is rolling out the driver…"
            return ""
        if self.is_mounted and self.live_holds_plan():
            return ""  # nothing to send: Verify checks what the live objects already run
        if getattr(self, "_helm_saved", False):
            return ""  # the change goes through `helm upgrade`; Verify says when it has not run yet
        if getattr(self, "_helm", None) is not None:
            return "save the Helm values (or apply directly)"
        if state.prepared is None:
            return "no server dry-run yet: go back to Preview"
        return "apply first (nothing is sent before you confirm)"
