"""Step 6, Preview: everything that will be sent, before anything is sent.

Tabs show the ClusterPolicy, the NVIDIADriver CRs, the mirror plan, the Helm values and the diff
against the live objects. Above them: the server dry-run's verdict (``Cluster.prepare_apply``, run
in a worker bound to this screen) and the renderer's warnings. Save writes the active tab to a file.
Rendering is ``wizard.engine.render.render(plan, facts)``; this screen only shows it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Static, TabbedContent, TabPane

from screens.state import display_path, import_facade
from screens.steps.base import StepScreen
from screens.widgets.code import CodeView, Language, highlight
from screens.widgets.toggles import Tick

#: The tab shown first: the only one whose view is composed with the step.
FIRST_TAB = "tab-policy"
#: Tab id -> (title, language, default file name).
#: Tab id -> its title below :data:`NARROW` columns, where the six full titles do not fit side by side.
SHORT_TITLES = {
    "tab-policy": "Policy",
    "tab-nvd": "NVD",
    "tab-mirror": "Mirror",
    "tab-helm": "Helm",
    "tab-diff": "Diff",
    "tab-advice": "Warnings",
}
#: Terminal width under which the tabs take their short titles (the full ones need 79 columns).
NARROW = 80
TABS: dict[str, tuple[str, Language, str]] = {
    "tab-policy": ("ClusterPolicy", "yaml", "clusterpolicy.yaml"),
    "tab-nvd": ("NVIDIADriver", "yaml", "nvidiadrivers.yaml"),
    "tab-mirror": ("Mirror plan", "shell", "mirror.sh"),
    "tab-helm": ("Helm values", "yaml", "helm-values.yaml"),
    "tab-diff": ("Diff vs live", "diff", "live.diff"),
    "tab-advice": ("Warnings", "text", "warnings.txt"),
}


def tab_texts(rendered: Any, images: Sequence[Any] = ()) -> dict[str, tuple[str, Content]]:
    """Each tab's text and its highlighted content (CPU work: called in a thread); ``images``: the registry's
    answers, so the mirror plan copies none of what no source holds."""
    from screens.findings import unheld_sources
    from wizard.engine.image_lists import images_comment
    from wizard.engine.mirror import mark_unheld
    from wizard.engine.render import helm_yaml, mirror_script, to_yaml

    texts = {
        "tab-policy": to_yaml([rendered.cluster_policy]),
        "tab-nvd": to_yaml(rendered.nvidia_drivers)
        or "# no NVIDIADriver: the driver is configured in the ClusterPolicy (useNvidiaDriverCRD: false)\n",
        "tab-mirror": mirror_script(mark_unheld(rendered.mirror, unheld_sources(images)))
        + "\n"
        + images_comment(rendered),
        "tab-helm": helm_yaml(rendered),
        "tab-diff": "# the diff against the live objects appears after the server dry-run\n",
    }
    return {tab_id: (text, highlight(text, TABS[tab_id][1])) for tab_id, text in texts.items()}


class PreviewStep(StepScreen):
    """Review the rendered resources and the server's dry-run verdict."""

    NEXT_LABEL = "Apply… ▶"
    # the first focus on the text under review (the arrows and PageDown scroll it), not on "Save…",
    # which Enter would open: reading comes before saving
    AUTO_FOCUS = "TabPane CodeView"
    _rendering = False

    def __init__(self) -> None:
        super().__init__()
        self._tab_texts: dict[str, tuple[str, Content | None]] = {}
        """Tab id -> its text and highlighted content (None: highlighted when its view is mounted)."""

    DEFAULT_CSS = """
    #verdict-row { height: auto; }
    #dry-run { width: 1fr; height: auto; }
    #save { min-width: 10; }
    #blocking { height: auto; max-height: 6; overflow-y: auto; }
    #warnings { height: auto; max-height: 3; }
    #override { display: none; }
    #advice { text-wrap: nowrap; text-overflow: ellipsis; }
    #preview-tabs { height: 1fr; }
    #preview-tabs TabPane { padding: 0; }
    """

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="verdict-row"):
            yield Static("", id="dry-run")
            yield Button("Save…", id="save", compact=True)
        yield Tick("apply anyway: I have read the blocking findings", id="override", compact=True)
        # a blocking finding in full, wrapped: it is what stops the apply, so it is never cut
        yield Static("", id="blocking")
        # not a Tab stop: it showed no focus, and the Warnings tab holds each warning in full
        with VerticalScroll(id="warnings", can_focus=False):
            yield Static("", id="advice")
        with TabbedContent(id="preview-tabs"):
            for tab_id, (title, language, _) in TABS.items():
                with TabPane(title, id=tab_id):
                    if tab_id == FIRST_TAB:  # the others' views are mounted when their tab is first shown
                        yield CodeView("", language, id=f"{tab_id}-code")

    def tab_text(self, tab_id: str) -> str:
        """The plain text of a tab (what Save writes), shown or not."""
        return self._tab_texts.get(tab_id, ("", None))[0]

    def _show_tab(self, tab_id: str, text: str, content: Content | None = None) -> None:
        """Keep a tab's text; its view shows it now when mounted, else when the tab is first shown."""
        self._tab_texts[tab_id] = (text, content)
        for view in self.query(f"#{tab_id}-code").results(CodeView):
            view.show(text, content=content)

    @on(TabbedContent.TabActivated)
    def _tab_shown(self, event: TabbedContent.TabActivated) -> None:
        """A tab shown for the first time gets its view: six views laid out at once made Preview's first frame."""
        pane = event.pane
        tab_id = str(pane.id)
        if tab_id not in TABS or pane.query(CodeView):
            return
        text, content = self._tab_texts.get(tab_id, ("", None))
        pane.mount(CodeView(text, TABS[tab_id][1], content=content, id=f"{tab_id}-code"))

    def on_resize(self, event: events.Resize) -> None:
        """Short tab titles below :data:`NARROW` columns: at 60 the full ones pushed Diff and Warnings out of sight."""
        super().on_resize(event)
        self._title_tabs(event.size.width)

    def _title_tabs(self, width: int) -> None:
        tabs = self.query_one(TabbedContent)
        for tab_id, (title, _, _) in TABS.items():
            tab = tabs.get_tab(tab_id)
            wanted = SHORT_TITLES[tab_id] if width < NARROW else title
            if str(tab.label) != wanted:
                tab.label = wanted

    def on_mount(self) -> None:
        self.query_one("#warnings").display = False
        self.query_one("#blocking").display = False
        if self.app.size.width < NARROW:
            self._title_tabs(self.app.size.width)
        state = self.state
        plan = state.plan()
        facts = state.facts
        if plan is None:
            self._verdict("[$error]✗ the answers are incomplete: go back and fix the fields marked ✗[/]")
            self.refresh_nav()
            return
        if facts is None:
            self._verdict("[$error]✗ no node facts: connect to a cluster (step 1) first[/]")
            self.refresh_nav()
            return
        self._verdict("[$accent]… rendering[/]")
        self._rendering = True
        self.render_plan(plan, facts)

    # A description of its own: without one Textual's @work writes repr() of every argument into the
    # worker's description, and the repr of 5,000 nodes' facts held the event loop.
    @work(exclusive=True, group="render", exit_on_error=False, description="render the plan")
    async def render_plan(self, plan: Any, facts: Any) -> None:
        """Render and lay out the tabs in a thread (costly at 5,000 nodes: never on the event loop), then dry-run."""
        state = self.state
        facade = await asyncio.to_thread(import_facade)
        try:  # in a thread (the facade's render carries the engine's memory policy)
            rendered = await facade.render_plan(plan, facts)
        except ValueError as exc:
            self._rendering = False
            self._verdict("")
            self.show_error(exc, "Cannot render the plan")
            self.refresh_nav()
            return
        state.rendered, self._rendering = rendered, False
        texts = await asyncio.to_thread(tab_texts, rendered, list(self.state.images))
        for tab_id, (text, content) in texts.items():
            self._show_tab(tab_id, text, content)
        self._show_advice()
        if state.cluster is None:
            self._verdict("[$warning]! not connected: no server dry-run (the resources are shown as rendered)[/]")
            self.refresh_nav()
        else:
            self.dry_run()

    def _show_advice(self) -> None:
        """Every finding of the plan (this step's and the earlier steps'), and the renderer's notes."""
        from rich.markup import escape

        from screens.findings import plan_findings
        from wizard.engine.steps import PREVIEW, STEPS

        rendered = self.state.rendered
        findings = plan_findings(self.state)
        blocking, lines, full = [], [], []
        for finding in findings:
            # a blocking finding the step that found it overrode is listed, but not under ✗: the ✗ lines are the
            # ones the status line counts ("N blocking findings")
            earlier = (
                finding.blocking
                and finding.step != PREVIEW.name
                and finding.message in self.state.overrides.get(finding.step, ())
            )
            if earlier:
                where = next((spec.title for spec in STEPS if spec.name == finding.step), finding.step)
                lines.append(f"[$warning]{escape(f'! overridden on {where}: {finding.message}')}[/]")
            elif finding.blocking:
                blocking.append(f"[$error]{escape(finding.line())}[/]")
            else:
                lines.append(f"[$warning]{escape(finding.line())}[/]")
            kind = "blocking, overridden" if earlier else "blocking" if finding.blocking else "warning"
            full.append(f"{finding.line()}  ({kind}, {finding.step} step)\n  → {finding.hint}\n")
        notes = [a for a in getattr(rendered, "advice", []) if a.level != "warning"]
        for item in notes:
            full.append(f"i note: {item.message}\n  why: {item.reason}\n")
        if findings or notes:
            noted = f"i {len(notes)} note(s); " if notes else ""
            lines.append(f"[$text-muted]{noted}the Warnings tab has each finding in full, with what to do[/]")
        self.query_one("#blocking", Static).update("\n".join(blocking))
        self.query_one("#blocking").display = bool(blocking)
        self.query_one("#advice", Static).update("\n".join(lines))
        self.query_one("#warnings").display = bool(lines)
        self.sync_override()  # ticked only while it covers every blocking finding listed now
        self._show_tab("tab-advice", "\n".join(full) or "no warnings\n")

    def _verdict(self, markup: str) -> None:
        self.query_one("#dry-run", Static).update(markup)

    @work(exclusive=True, group="dry-run", exit_on_error=False)
    async def dry_run(self) -> None:
        """Server-side dry-run of every object, and the diff against the live ones."""
        state = self.state
        self._verdict("[$accent]… server dry-run running[/]")
        self.refresh_nav()
        cluster = state.connected()
        rendered = state.rendered
        assert rendered is not None  # the dry run follows the render (render_plan)
        plan = rendered.plan
        installs = bool(getattr(state.preflight, "installs_operator", False))
        if installs:
            prepared = await cluster.preview_install(rendered)
        else:
            from wizard.engine.ownership import ownership_of

            owner = ownership_of(state.preflight.cluster_policy if state.preflight is not None else None)
            prepared = await cluster.prepare_apply(rendered, force_conflicts=owner.dry_run_takes_fields)
        state.references = list(await cluster.reference_checks(plan))
        if not state.images:  # the Driver step was left before its registry check finished (or skipped)
            async with self.wizard.open_registry(plan) as registry:
                if registry is not None:
                    state.images = list(await cluster.check_images(rendered, registry))
        from screens.findings import folder_checks
        from screens.steps.paths import auto_check, auto_nodes

        if folder_checks(state)[0] is None and auto_check(state):  # Paths was left before its node-side checks ended
            self._verdict("[$accent]… checking the host paths on the nodes[/]")
            nodes, _ = auto_nodes(state)
            stream = cluster.check_paths(plan, toolkit_install_dir=state.get("toolkit.installDir"), nodes=nodes)
            async with contextlib.aclosing(stream):
                state.path_checks = [check async for check in stream]
        from screens.hostcheck import run_host_check, wanted

        if wanted(state):  # Nodes was left before its host check finished: nouveau or Secure Boot must not wait
            self._verdict("[$accent]… checking the GPU nodes' hosts (nouveau, Secure Boot, a host driver…)[/]")
            await run_host_check(state)
        state.prepared = prepared  # last: Next waits for every finding above
        await self._name_live_policy(prepared)
        self._show_prepared(prepared)
        self._show_advice()  # the references and images just checked are findings too
        self.refresh_nav()
        self.maybe_replay()

    async def _name_live_policy(self, prepared: Any) -> None:
        """The ClusterPolicy tab under the live policy's name when it has another: the apply updates that one."""
        from wizard.engine.render import to_yaml

        rendered = self.state.rendered
        live = [
            key.split("/", 1)[1] for key, body in prepared.live.items() if key.startswith("ClusterPolicy/") and body
        ]
        if rendered is None or not live or live[0] == rendered.cluster_policy["metadata"]["name"]:
            return
        policy = {**rendered.cluster_policy, "metadata": {**rendered.cluster_policy["metadata"], "name": live[0]}}
        note = f"# the cluster's ClusterPolicy is named {live[0]}: the apply updates it, its name kept\n"
        text = note + await asyncio.to_thread(to_yaml, [policy])
        self._show_tab("tab-policy", text, await asyncio.to_thread(highlight, text, "yaml"))

    def _show_prepared(self, prepared: Any) -> None:
        from rich.markup import escape

        from screens.apply_text import changes

        diff = str(getattr(prepared, "diff", "") or "")
        self._show_tab("tab-diff", diff or "# no change against the live objects\n")
        if prepared.ok and getattr(self.state.preflight, "installs_operator", False):
            summary = ", ".join(changes(prepared))
            verdict = (
                f"[$success]✓ checked against the release's CRDs:[/] {escape(summary)} [$text-muted](no server "
                "dry-run: the GPU Operator is not installed; Apply installs it with these objects)[/]"
            )
        elif prepared.ok:
            summary = ", ".join(changes(prepared)) or "nothing to change"
            verdict = f"[$success]✓ server dry-run accepted:[/] {escape(summary)}"
            if not prepared.changed:
                verdict += " [$text-muted](the live objects already hold this plan: Verify needs no apply)[/]"
            elif prepared.holds_driver:  # the diff is not empty: what it changes needs an apply (k0s toolkit settings…)
                verdict += " [$text-muted](the driver image stays; the rest takes effect only once applied)[/]"
        else:
            errors = "; ".join(str(e) for e in prepared.errors)
            verdict = f"[$error]✗ server dry-run rejected:[/] {escape(errors)}"
        self._verdict(verdict)

    def blocker(self) -> str:
        state = self.state
        if self._rendering:
            return "rendering…"
        if state.rendered is None:
            return "nothing rendered: fix the earlier steps"
        if state.cluster is None:
            return "not connected: Apply needs a cluster"
        if state.prepared is None:
            return "server dry-run running…"
        if not state.prepared.ok:
            return "the API server rejected the objects (see above)"
        from screens.findings import blocking_reason

        return blocking_reason(
            state
        )  # always: a blocking finding holds Next even where the live objects run the driver

    def blocker_detail(self) -> str:
        from screens.findings import standing

        found = standing(self.state)
        if not found:
            return ""
        first = found[0]  # one of those the status line counts, not one overridden where it was found
        return (
            f"{first.message}\n→ {first.hint}\nFix it, or tick 'apply anyway' (the Warnings tab lists every finding)."
        )

    # -- save -------------------------------------------------------------------------------

    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        from screens.dialogs import PathDialog

        tabs = self.query_one(TabbedContent)
        tab_id = tabs.active or "tab-policy"
        title, _, filename = TABS[tab_id]
        if tab_id in ("tab-policy", "tab-nvd"):
            title, filename = "Manifests", "gpu-operator-driver.yaml"
        default = display_path(self.wizard.report_dir / filename)
        self.app.push_screen(PathDialog(f"Save {title} to", default), lambda path: self._save(path, tab_id))

    def _save(self, path: str | None, tab_id: str) -> None:
        from wizard.atomic_write import write_private

        if not path:
            return
        text = self.tab_text(tab_id)
        if tab_id in ("tab-policy", "tab-nvd") and self.state.rendered is not None:
            from wizard.engine.render import to_yaml

            text = to_yaml(self.state.rendered.documents())
        try:
            write_private(Path(path), text)
        except OSError as exc:
            self.show_error(exc, "Could not save")
            return
        self.notify(f"Saved {display_path(path)}", title="Preview")

    # -- bundle ------------------------------------------------------------------------------

    def action_save_bundle(self) -> None:
        """The palette's "Save GitOps bundle…" (no button: the verdict row has no room for one at 80 columns)."""
        from screens.dialogs.bundle import BundleDialog

        if self.state.rendered is None:
            self.notify("The plan is still being rendered", title="Preview")
            return
        default = display_path(self.wizard.report_dir / "gpu-operator-bundle")
        self.app.push_screen(BundleDialog(default), self._save_bundle)

    def _save_bundle(self, choice: tuple[str, str] | None) -> None:
        """Write the plan's bundle for the chosen deployer, with Preview's blocking findings in FINDINGS."""
        from screens.findings import plan_findings
        from wizard.atomic_write import write_files
        from wizard.engine.gitops import gitops_bundle

        rendered = self.state.rendered
        if not choice or rendered is None:
            return
        deployer, folder = choice
        blocking = [
            f"{f.message} (hint: {f.hint})" if f.hint else f.message for f in plan_findings(self.state) if f.blocking
        ]
        try:
            bundle = gitops_bundle(rendered, deployer, blocking)
            write_files(folder, bundle.files)
        except (OSError, ValueError) as exc:
            self.show_error(exc, "Could not save the bundle")
            return
        held = f"; {len(bundle.findings)} finding(s) block the plan: see FINDINGS" if bundle.blocked else ""
        self.notify(f"Saved the {deployer} bundle in {display_path(folder)}{held}", title="Preview")
