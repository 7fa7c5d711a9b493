"""Step 5, Paths: toolkit installDir and driverInstallDir, validated as you type, checked on nodes.

The defaults follow the GPU nodes' OS profile (``ClusterFacts.recommend_toolkit_dir``: an immutable
OS gets ``/run/nvidia/toolkit-install``). Each keystroke is validated by the plan's own path rule;
"Check on nodes" asks the cluster engine whether each folder exists, is writable and allows exec. The Nodes step's
host check probed the folders of the answers so far (the wizard's defaults) already: while these are the same, its
answer is shown and kept (:func:`screens.findings.nodes_folder_checks`), not probed again; other folders are.
"""

from __future__ import annotations

import contextlib
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Label

from screens.steps.formstep import FormStep
from screens.widgets.field import AnswerField
from screens.widgets.pathresults import PathResults
from screens.widgets.toggles import Tick

NO_CHECKS = "the engine ran no path checks on these nodes"
FROM_NODES = "from the Nodes step's host check (the same folders): Check on nodes checks them again"
FROM_NODES_SAMPLE = "from the Nodes step's host check, a sample"


def auto_check(state: Any) -> bool:
    """Check the paths without being asked: on every GPU node up to 64, else on a sample (:func:`auto_nodes`).
    The limit spares the cluster, not the screen: results are drawn in batches (``PathResults``) and 5,000
    nodes show smoothly, but 5,000 probe pods are not started without "Check on nodes"."""
    facts = state.facts
    return facts is not None and bool(facts.gpu_nodes)


def auto_nodes(state: Any) -> tuple[list[str] | None, str]:
    """The nodes a check without being asked takes (None: every GPU node) and, for a sample, what it covers
    (``wizard.engine.hostsample``: two per kernel and OS above 64 GPU nodes, as the host check takes)."""
    from screens.hostcheck import release_of
    from wizard.engine.hostsample import host_sample

    sample = host_sample(state.facts, release_of(state))
    if not sample.rest:
        return None, ""
    return list(sample.nodes), f"checked a sample, {sample.describe()}: Check on nodes checks every one"


class PathsStep(FormStep):
    """Where the toolkit and the driver live on the host."""

    DEFAULT_CSS = """
    #path-buttons { height: 1; margin-top: 1; }
    #path-buttons > Button { margin-right: 2; }
    #override { display: none; }
    #runtime { margin-top: 1; width: 100%; height: auto; }
    """

    def compose_body(self) -> ComposeResult:
        from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR

        state = self.state
        toolkit_default, toolkit_reason = self._toolkit_default()
        yield Label("Host paths", classes="section -first")
        yield AnswerField(
            "toolkit installDir",
            "toolkit.installDir",
            state.get("toolkit.installDir") or toolkit_default,
            placeholder=toolkit_default,
            hint=f"default {toolkit_default}: {toolkit_reason}",
        )
        yield AnswerField(
            "driverInstallDir",
            "hostPaths.driverInstallDir",
            state.get("hostPaths.driverInstallDir") or DEFAULT_DRIVER_INSTALL_DIR,
            placeholder=DEFAULT_DRIVER_INSTALL_DIR,
            hint=self._driver_dir_hint(),
        )
        yield Label(self._runtime_text(), id="runtime", markup=False)
        with Horizontal(id="path-buttons"):
            yield Button("Check on nodes", id="check-paths", compact=True, variant="primary")
            yield Button("Restore defaults", id="defaults", compact=True)
            yield Tick("continue anyway", id="override", compact=True)
        yield Label("Node-side checks", classes="section")
        yield PathResults(self._idle_text(), id="path-checks")

    def _toolkit_default(self) -> tuple[str, str]:
        from wizard.engine.plan import DEFAULT_TOOLKIT_INSTALL_DIR

        facts = self.state.facts
        if facts is None:
            return DEFAULT_TOOLKIT_INSTALL_DIR, "the operator's default"
        rec = facts.recommend_toolkit_dir()
        return rec.value, rec.reason

    def _runtime_text(self) -> str:
        """``Container runtime: RKE2 (containerd at …) → toolkit env …`` for the plan on these nodes (F1 explains)."""
        from wizard.engine.runtime import runtime_choice
        from wizard.engine.textsafe import printable

        plan, facts = self.state.plan(), self.state.facts
        if plan is None or facts is None:
            return "Container runtime: read from the GPU nodes once connected (toolkit.env in the answers overrides it)"
        choice = runtime_choice(plan, facts)
        how = {"answers": "toolkit.env from the answers", "toolkit.runtime": "toolkit.runtime from the answers"}
        said = how.get(choice.source, f"read from {choice.evidence}")
        misfit = f"; {len(choice.misfits)} GPU node(s) need other settings" if choice.misfits else ""
        return printable(f"Container runtime: {choice.summary()} ({said}{misfit})")

    def _driver_dir_hint(self) -> str:
        if self.state.get("mode") == "preinstalled":
            return "default /run/nvidia/driver; change only for a host driver in a non-standard root"
        return "default /run/nvidia/driver: where the driver container exposes the driver on the host"

    def _idle_text(self) -> str:
        if self.state.cluster is None:
            return "not connected: node-side checks need a cluster"
        return (
            "press Check on nodes: a short-lived probe pod on each GPU node tests both folders "
            "(exists, writable, not mounted noexec) before anything is applied"
        )

    def on_mount(self) -> None:
        state = self.state
        self.query_one("#check-paths").display = state.cluster is not None
        for field in self.query(AnswerField):
            state.set(field.path, self._stored(field.path, field.value))
        self.answers_changed()
        self.query_one(AnswerField).input.focus()
        if state.path_checks is not None:  # checked before for these very paths
            self._show_checks(state.path_checks)
        elif self._take_nodes_checks():
            pass
        elif state.cluster is not None and (not state.replay or state.replay_until == self.STEP) and auto_check(state):
            plan = state.plan()
            if plan is not None:  # check right away: a noexec /run must not wait for a button press
                self.check_paths(plan, sampled=True)
        if state.replay:
            self.maybe_replay()

    def _stored(self, path: str, value: str) -> str | None:
        """driverInstallDir equal to the operator default is left out of the answers."""
        from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR

        if path == "hostPaths.driverInstallDir" and value == DEFAULT_DRIVER_INSTALL_DIR:
            return self.state.get(path)  # keep an explicit default from an answers file, add none
        return value or None

    def on_answer_field_changed(self, event: AnswerField.Changed) -> None:
        event.stop()
        event.prevent_default()  # Textual would also run FormStep's handler, storing the raw text over ours
        value = self._stored(event.field.path, event.value)
        if value == self.state.get(event.field.path):
            return  # the field said what it holds (on mount): results for it stay valid
        self.state.set(event.field.path, value)
        self.answers_changed()
        self.workers.cancel_group(self, "paths")  # results for the old value would mislead
        self.query_one("#path-checks", PathResults).update(self._idle_text())
        self._take_nodes_checks()  # back to the folders the Nodes step checked: its answer holds again
        self.sync_override()

    @on(Button.Pressed, "#defaults")
    def _restore(self) -> None:
        from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR

        values = {
            "toolkit.installDir": self._toolkit_default()[0],
            "hostPaths.driverInstallDir": DEFAULT_DRIVER_INSTALL_DIR,
        }
        for field in self.query(AnswerField):
            field.set_value(values[field.path])
            self.state.set(field.path, values[field.path] if field.path == "toolkit.installDir" else None)
        self.answers_changed()
        self.workers.cancel_group(self, "paths")
        self.query_one("#path-checks", PathResults).update(self._idle_text())
        if not self._take_nodes_checks():
            plan = self.state.plan()
            if self.state.cluster is not None and plan is not None and auto_check(self.state):
                self.check_paths(plan, sampled=True)  # the fix a failed check names: show at once whether it works
        self.sync_override()
        self.refresh_nav()

    def _take_nodes_checks(self) -> bool:
        """Show and keep the Nodes step's host check's answer when it checked these very folders (no second probe;
        its findings stay the Nodes step's: said once, overridden there). False when it did not."""
        from screens.findings import nodes_folder_checks
        from wizard.engine.results import Check, Status
        from wizard.engine.steps import NODES

        state = self.state
        if state.path_checks is not None:
            return False
        checks = nodes_folder_checks(state)
        if checks is None:
            return False
        nodes = {c.node for c in checks if c.node}
        failed = sorted({c.node for c in checks if c.node and not c.ok})
        shown = ", ".join(failed[:10]) + ("…" if len(failed) > 10 else "")
        summary = (  # worded as the probe's own summary (wizard.cluster.hostchecks.pathcheck)
            Check("summary", Status.FAIL, f"path problems on {len(failed)} of {len(nodes)} nodes: {shown}")
            if failed
            else Check("summary", Status.PASS, f"host paths usable on all {len(nodes)} nodes")
        )
        note = (
            FROM_NODES
            if not state.host_rest
            else f"{FROM_NODES_SAMPLE}, {state.host_checked}: Check on nodes checks every one"
        )
        state.path_checks = [Check("nodes", Status.SKIP, note), *checks, summary]
        state.path_checks_from = NODES.name
        self._show_checks(state.path_checks)
        return True

    @on(Button.Pressed, "#check-paths")
    def _check_pressed(self) -> None:
        if self.state.cluster is None:
            self.notify("Connect to a cluster first (step 1).", severity="warning")
            return
        plan, errors = self.state.validate()
        if plan is None:
            first = f"{errors[0].field}: {errors[0].message}" if errors else "the answers are incomplete"
            self.notify(f"Fix the answers first: {first}", severity="warning")
            return
        self.check_paths(plan)

    @work(exclusive=True, group="paths", exit_on_error=False, description="check the host paths on the nodes")
    async def check_paths(self, plan: Any, sampled: bool = False) -> None:  # (a description: no repr() of the plan)
        """Run the node-side checks of both folders, showing each node's results as they come (``sampled``:
        on :func:`auto_nodes`' sample above 64 GPU nodes, said in the results)."""
        from wizard.engine.results import Check, Status

        results = self.query_one("#path-checks", PathResults)
        results.start("checking: a probe pod on each GPU node")
        self.state.reset_step(self.STEP)  # the checks of the paths before
        self.refresh_nav()
        nodes, covered = auto_nodes(self.state) if sampled else (None, "")
        checks: list[Any] = [Check("sample", Status.SKIP, covered)] if covered else []
        for check in checks:
            results.add(check)
        cluster = self.state.connected()
        stream = cluster.check_paths(plan, toolkit_install_dir=self.state.get("toolkit.installDir"), nodes=nodes)
        async with contextlib.aclosing(stream):
            async for check in stream:
                checks.append(check)
                results.add(check)  # drawn in batches, at most ten times a second
        self.state.path_checks = checks
        results.finish(NO_CHECKS)
        self._after_checks(checks)

    def _show_checks(self, checks: list[Any]) -> None:
        self.query_one("#path-checks", PathResults).show(checks, NO_CHECKS)
        self._after_checks(checks)

    def _after_checks(self, checks: list[Any]) -> None:
        self.sync_override()
        self.refresh_nav()

    def blocker(self) -> str:
        from screens.findings import standing

        reason = super().blocker()
        if reason:
            return reason
        if standing(self.state, self.STEP):
            return "path check failed: fix or tick 'continue anyway'"
        return ""
