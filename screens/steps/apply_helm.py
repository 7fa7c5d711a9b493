"""The Apply step's ways through Helm: the operator installed as a Helm release, and a Helm-owned change.

Where no operator runs, Apply installs it (``helm upgrade --install`` of the release's chart with the plan's
values, or the command shown and a wait when helm is not on PATH). Where a Helm release owns the live
ClusterPolicy, the change is the release's values: **Run helm upgrade…** (helm on PATH) backs up, upgrades
the release and deletes the driver DaemonSets the operator leaves behind, as ``gpu-wizard apply`` does;
**Save Helm values** / **Copy helm command** hand the same change to the person. Both confirm first with the
page of risks an apply shows (:mod:`screens.apply_text`). :class:`HelmPaths` is the Apply step's base:
the step keeps the direct apply and the rollout (:mod:`screens.steps.apply`).
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual import on, work
from textual.widgets import Button, Checkbox, Label, Static

from screens.apply_text import changes, helm_undo, warnings
from screens.host import SaveProgress
from screens.state import display_path
from screens.steps.base import StepScreen
from screens.widgets.rolloutview import RolloutView
from screens.widgets.upgradeplan import UpgradePlanView


class HelmPaths(StepScreen):
    """What the Apply step does through Helm, and the checks and words every way of sending shares."""

    _owner: Any
    """The live policy's :class:`~wizard.engine.ownership.Ownership`."""
    _install: Any
    """The OperatorInstall when no operator runs yet (None otherwise)."""
    _helm: Any = None
    """The HelmChange when a Helm release owns the live policy."""
    _helm_saved = False
    _sent = False
    _advice: list[str]
    _told_ready: bool | None = None

    def follow_rollout(self) -> Any:
        """Follow this plan's rollout (the Apply step's worker)."""
        raise NotImplementedError

    def _ownership(self) -> Any:
        from wizard.engine.ownership import ownership_of

        preflight = self.state.preflight
        return ownership_of(preflight.cluster_policy if preflight is not None else None)

    def _show_helm(self) -> None:
        """The release's values and the ``helm upgrade`` that carries them; a direct apply becomes the exception."""
        from wizard.cluster.facade import helm_binary, helm_change, helm_values_path

        state = self.state
        self.query_one("#apply", Button).label = "Apply directly…"
        runs = helm_binary() is not None  # else the person runs the commands where helm is
        run_button = self.query_one("#helm-run", Button)
        if runs != run_button.display:
            run_button.display = runs
            (run_button if runs else self.query_one("#helm-save", Button)).focus()
        if state.rendered is None:
            return
        context = state.info.context if state.info is not None else "cluster"
        live = state.preflight.cluster_policy if state.preflight is not None else None
        running = state.preflight.operator_release if state.preflight is not None else ""
        prepared = state.prepared  # the preview named the driver DaemonSets the operator leaves behind
        leftovers = prepared.leftovers if prepared is not None else []
        namespace = prepared.namespace if prepared is not None else ""
        labels = prepared.node_labels if prepared is not None else {}  # the excluded nodes, labelled after it
        self._helm = helm_change(
            state.rendered, self._owner, live, helm_values_path(context), running, leftovers, namespace, labels
        )
        self.query_one("#helm-row").display = True
        steps = "\n".join(f"  {escape(command)}" for command in self._helm.steps())
        values = self.query_one("#helm-values", Static)
        values.display = True
        where = escape(display_path(self._helm.values_path))
        how = (
            f"[b]Run helm upgrade…[/] backs up the live policy, writes the values to {where} (0600) and runs:"
            if runs
            else f"[b]Helm values[/] (Save, or Copy, writes them to {where}, 0600), then run:"
        )
        values.update(f"{how}\n{steps}\n{escape(self._helm.values_text.rstrip())}")

    @on(Button.Pressed, "#helm-save")
    def _helm_save(self) -> None:
        if self._save_helm_values():
            self.notify(f"Saved {display_path(self._helm.values_path)} (0600).", title="Helm values")

    @on(Button.Pressed, "#helm-copy")
    def _helm_copy(self) -> None:
        """The command names the values file: it is saved first, so what is copied can run."""
        from screens.clipboard import copy_text

        if not self._helm_saved and not self._save_helm_values():
            return
        said = copy_text(self.app, "\n".join(self._helm.steps()), "The helm command")
        self.notify(f"Saved {display_path(self._helm.values_path)}. {said}", title="Helm command")

    def _save_helm_values(self) -> bool:
        """Write the release's values (0600); False (after saying why) when they could not be written."""
        from wizard.atomic_write import WriteError

        if self._helm is None:
            return False
        try:
            self._helm.write()
        except WriteError as exc:
            self.notify(str(exc), title="Not saved", severity="error")
            return False
        self._helm_saved = True
        self.state.helm_command = self._helm.command
        self.refresh_nav()
        return True

    @on(Button.Pressed, "#helm-run")
    def _helm_run_pressed(self) -> None:
        """The change through the owning release, confirmed first (the same page of risks as an apply's)."""
        from screens.dialogs import ConfirmDialog

        if self._helm is None or not self._may_send():
            return
        asked = self._confirmation(through_helm=True)
        self.app.push_screen(ConfirmDialog(asked.title, asked.body, yes=asked.yes, no="Cancel"), self._helm_confirmed)

    def _confirmation(self, *, through_helm: bool = False) -> Any:
        """The page of risks an apply and a helm upgrade both confirm (:func:`screens.apply_text.confirmation`)."""
        from screens.apply_text import confirmation
        from wizard.engine.image_lists import compact_summary

        state = self.state
        return confirmation(
            where=self._where(),
            changes=changes(state.prepared),
            backup=display_path(self.wizard.backup_dir),
            warnings=warnings(state),
            owner=self._owner,
            evictions=self._evictions(),
            unread=self.query_one(UpgradePlanView).unread,
            images=compact_summary(state.rendered) if state.rendered is not None else "",
            through_helm=through_helm,
        )

    def _helm_confirmed(self, yes: bool | None) -> None:
        if yes:
            self.run_helm()

    @work(exclusive=True, group="apply", exit_on_error=False)
    async def run_helm(self) -> None:
        """Back up, ``helm upgrade`` the owning release, delete the leftovers, then follow the rollout."""
        from pathlib import Path

        from wizard.cluster.errors import ClusterError
        from wizard.cluster.facade import ApplyResult, helm_binary
        from wizard.engine.operator_install import chart_source

        state, change, sending = self.state, self._helm, self.state.prepared
        helm = helm_binary()
        if change is None or sending is None or state.rendered is None or helm is None:
            return
        try:
            chart = chart_source(state.rendered.plan.operator.version, state.chart)
        except ValueError as exc:
            self.notify(str(exc), title="Not run", severity="error")
            return
        cluster = state.connected()
        self.workers.cancel_group(self, "rollout")  # the rollout followed so far is the one before this change
        buttons = [self.query_one(f"#{name}", Button) for name in ("helm-run", "apply")]
        for button in buttons:
            button.disabled = True
        view = self.query_one(RolloutView)
        view.say(f"[$accent]… backing up, then {escape(change.command)}[/]")
        allow = self.query_one("#allow-unverified", Checkbox).value
        try:
            run = await cluster.upgrade_through_helm(
                change,
                chart,
                state.rendered,
                sending.leftovers,
                helm=helm,
                backup_dir=self.wizard.backup_dir,
                allow_unverified_preinstalled=allow,
            )
        except ClusterError as exc:  # pre-installed mode: a host where nvidia-smi does not pass
            view.say(f"[$error]not started:[/] {escape(exc.message)}")
            return
        finally:
            for button in buttons:
                button.disabled = False
        backup = run.backup_path or Path(change.values_path)
        objects = [f"helm upgrade {change.owner.release}", *run.deleted]
        state.applied = ApplyResult("applied" if run.ok else "unchanged", backup, objects, message=run.message)
        self._applied_text()
        if not run.ok:
            view.say(f"not started: {escape(run.message)}\n  {escape(run.command)}")
            self.refresh_nav()
            return
        self._helm_saved = True  # the values file holds what the release now carries
        state.preflight = await cluster.preflight(state.valid_plan(), install_operator=True)  # read again
        state.applied_for, self._sent, self._advice, self._told_ready = sending, True, [], False
        self.query_one("#helm-run", Button).label = "Run helm upgrade again…"
        self.post_message(SaveProgress(self.STEP))
        self.refresh_nav()
        self.follow_rollout()

    def _may_send(self) -> bool:
        """Whether this plan may go to the cluster now (a dry-run of it, no blocking finding); else say why."""
        from screens.findings import blocking_reason

        state = self.state
        if state.cluster is None or state.prepared is None:
            self.notify("Connect and preview first.", severity="warning")
            return False
        if blocking_reason(state):  # Preview let this plan through to show what runs, not to apply it
            self.notify(
                "A blocking finding stands (Preview lists it): fix it, or tick 'apply anyway' on Preview.",
                title="Not applied",
                severity="warning",
            )
            return False
        return True

    def _where(self) -> str:
        """The cluster as a confirmation names it: its context, and the demo or the server's address."""
        info = self.state.info
        return f"**{info.context if info else '?'}**" + (
            " (the built-in demo cluster)" if info and info.demo else f" at `{info.server if info else '?'}`"
        )

    def _evictions(self) -> dict[str, list[str]] | None:
        """GPU workload pods the apply evicts, per node ({} when none; None while the upgrade plan is read)."""
        view = self.query_one(UpgradePlanView)
        if not view.display:
            return {}  # no policy runs yet: nothing to evict
        report = view.report
        if report is None:
            return None
        found = {node: list(pods) for node, pods in report.plan.evictions.items()}
        in_progress = report.plan.in_progress
        for node, pods in (in_progress.evictions if in_progress is not None else {}).items():
            found.setdefault(node, list(pods))
        return found

    def _operator_install(self) -> Any:
        """What installing the operator would do, when preflight found none running (None otherwise)."""
        state = self.state
        if not getattr(state.preflight, "installs_operator", False) or state.rendered is None:
            return None
        from wizard.engine.operator_install import chart_source, operator_install

        chart = chart_source(state.rendered.plan.operator.version, state.chart) if state.chart else None
        return operator_install(state.rendered, chart)

    async def _install_body(self) -> None:
        """Install the operator (helm, or the shown command and a wait), then follow the rollout as after an apply."""
        from screens.clipboard import copy_text
        from wizard.cluster.facade import ApplyResult, helm_binary, install_values_path

        state = self.state
        cluster = state.connected()
        self.workers.cancel_group(self, "rollout")
        self.query_one("#apply", Button).disabled = True
        helm = helm_binary()
        values = install_values_path(cluster.info.context)
        view = self.query_one(RolloutView)
        view.say(
            f"[$accent]… helm upgrade --install {escape(self._install.name)} (values {escape(display_path(values))})[/]"
        )

        def said(command: str) -> None:
            view.say(
                f"helm is not on PATH: run this where helm is; gpu-wizard waits for the operator\n  {escape(command)}"
            )
            self.notify(copy_text(self.app, command, "The helm command"), title="Run helm", timeout=15)

        try:
            labels = state.prepared.node_labels if state.prepared is not None else {}  # Preview read them
            run = await cluster.install_operator(
                self._install, values, helm=helm, wait_timeout=1800.0, said=said, node_labels=labels
            )
        finally:
            self.query_one("#apply", Button).disabled = False
        state.applied = ApplyResult(
            "applied" if run.ok else "unchanged",
            run.values_path,
            [f"helm release {self._install.name}"],
            message=run.message,
        )
        self._applied_text()
        if not run.ok:
            view.say(f"not started: {escape(run.message)}\n  {escape(run.command)}")
            self.refresh_nav()
            return
        state.preflight = await cluster.preflight(state.valid_plan(), install_operator=True)  # Helm owns it now
        self._owner, self._install = self._ownership(), None
        state.applied_for, self._sent, self._advice, self._told_ready = state.prepared, True, [], False
        self.query_one("#apply", Button).label = "Apply again…"  # installed: the next press applies the plan again
        self.post_message(SaveProgress(self.STEP))
        self.refresh_nav()
        self.follow_rollout()

    def _applied_text(self) -> None:
        result = self.state.applied
        if result is None:
            return
        said = result.message or ", ".join(result.objects)
        head = f"[$success]✓ {escape(said)}[/]" if result.ok else f"[$error]✗ not applied:[/] {escape(said)}"
        self.query_one("#change-title", Label).update("What was sent")
        if result.objects and result.objects[0].startswith("helm release"):  # an install: no backup, the values
            self.query_one("#apply-summary", Static).update(
                f"{head}\nHelm values (later changes go through this release)\n"
                f"{escape(display_path(result.backup_path))}"
            )
            return
        undo = self._helm_undo() or "gpu-wizard rollback --backup FILE"
        self.query_one("#apply-summary", Static).update(
            f"{head}\nBackup (undo: {escape(undo)})\n{escape(display_path(result.backup_path))}"
        )

    def _helm_undo(self) -> str:
        """``helm rollback`` of the release the last change went through ("" when it went through no helm upgrade):
        the release's previous revision holds the values before it (a direct rollback would be reverted); the nodes
        the change kept out of the driver rollout get their labels back after it."""
        result = self.state.applied
        if result is None or not result.objects or not result.objects[0].startswith("helm upgrade "):
            return ""
        labelled = self.state.applied_for.node_labels if self.state.applied_for is not None else {}
        return helm_undo(self._owner, labelled)
