"""Step 3, Mode: precompiled, upstream or pre-installed, with the recommended one preselected.

The recommendation and its reason come from what is known: the node facts (``ClusterFacts.recommend_mode``:
the pre-installed label, the host check's nvidia-smi), the live ClusterPolicy (``driver.enabled=false``: the
hosts' own driver). Until something tells whether the hosts already run a driver, no mode gets the ★: the step
says so and offers the host check (a privileged probe pod per GPU node: run when asked, never unasked).
Beside the choices: a diagram of where the driver comes from in the selected mode and the
documents' comparison (control vs automation, when to choose each). Upstream is marked
"configurable, not validated in this release".
"""

from __future__ import annotations

import asyncio
import contextlib

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Label, RadioSet, Select, Static

from screens.help_text import MODE_DIAGRAM, MODE_FACTS
from screens.keys import help_key
from screens.steps.formstep import FormStep
from screens.widgets.chrome import NavBar
from screens.widgets.toggles import Choice

MODES = ("precompiled", "upstream", "preinstalled")
TITLES = {"precompiled": "Precompiled", "upstream": "Upstream", "preinstalled": "Pre-installed"}
UNVALIDATED = "configurable, not validated in this release"
TAGS_WAIT_SECONDS = 5.0
"""How long Next on Mode waits for the pull registry's tags still being read before going on with what is known."""
READING = "… reading the pull registry's tags: the ★ may move to Precompiled when they arrive"


class ModeStep(FormStep):
    """Choose the driver mode and the operator release."""

    DEFAULT_CSS = """
    #modes { width: 1fr; height: auto; border: none; padding: 0; }
    #release-row { height: auto; margin-top: 1; }
    #release-row > Label { width: 22; }
    #release { width: 16; }
    #release-note { width: 1fr; height: auto; padding-left: 2; }
    #release-note.-error { color: $error; }
    #reason { height: auto; }
    #diagram { height: auto; }
    #mode-facts { height: auto; }
    """

    def compose_body(self) -> ComposeResult:
        from wizard.engine.plan import KNOWN_RELEASES

        state = self.state
        recommended = self._recommended()
        current = state.get("mode") or recommended[0]
        known = not self._host_driver_unknown()
        yield Label("How should the driver reach the GPU nodes?", classes="section -first")
        with RadioSet(id="modes"):
            for mode in MODES:
                yield Choice(
                    self._label(mode, self._badged(mode, recommended[0], known)),
                    value=mode == current,
                    name=mode,
                    id=f"mode-{mode}",
                )
        yield Static(self._reason_text(recommended), id="reason", classes="hint", markup=False)
        check = Button("Check hosts for a driver", id="mode-host-check", compact=True)
        check.display = not known
        yield check
        yield Static("", id="diagram", classes="box", markup=False)
        yield Static("", id="mode-facts", markup=False)
        with Horizontal(id="release-row"):
            yield Label("GPU Operator release")
            releases = sorted(set(KNOWN_RELEASES.values()), reverse=True)
            detected = self._detected_release()
            version = state.get("operator.version") or detected or releases[0]
            options = [(r, r) for r in releases]
            if version not in releases:
                options.append((version, version))
            yield Select(options, value=version, allow_blank=False, compact=True, id="release")
            yield Static(self._release_hint(), id="release-note", classes="hint", markup=False)

    def _label(self, mode: str, recommended: bool) -> str:
        from screens.findings import mode_refusals

        label = TITLES[mode]
        if recommended:  # the ★ only on a mode this release validates (defect 21): upstream is only suggested
            label += "  · suggested" if mode == "upstream" else f"  ★ {self._star_word(mode)}"
        refusals = mode_refusals(self.state, mode)
        if refusals:  # a host finding refuses it as it is (a loaded host driver, Secure Boot): said on the choice
            label += f"  ✗ refused: {refusals[0].check} on {len({n for g in refusals for n in g.nodes})} node(s)"
        elif mode == "upstream":
            label += f"  · {UNVALIDATED}"
        return label

    def _badged(self, mode: str, recommended: str, known: bool) -> bool:
        """The ★ (or "suggested") goes on the recommended mode, never on one a host finding refuses as it is."""
        from screens.findings import mode_refusals

        return known and mode == recommended and not mode_refusals(self.state, mode)

    def _none_works(self, mode: str) -> str:
        """When the host check refuses even the recommended mode (Secure Boot under upstream on Rocky): say that no
        mode works as-is, and what would ("" while the recommended mode works)."""
        from screens.findings import mode_refusals

        refusals = [g for g in mode_refusals(self.state, mode) if g.check == "secure-boot-unsigned"]
        if not refusals:
            return ""
        nodes = sorted({node for group in refusals for node in group.nodes})
        shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        facts = self.state.facts
        ubuntu = facts is not None and all(n.os_id == "ubuntu" for n in facts.gpu_nodes)
        signed = (
            "Ubuntu's signed linux-modules-nvidia packages"
            if ubuntu
            else "a host driver whose module is signed with a key enrolled in the nodes' MOK list "
            "(mokutil --list-enrolled)"
        )
        tags = self.state.precompiled_tags
        missing = []
        if facts is not None and tags is not None:
            release = str(self.state.get("operator.version") or self._detected_release() or "")
            missing = facts.precompiled_missing(tags, release) if release else []
        where = self.state.precompiled_from or "the pull registry"
        if missing:
            lacked = ", ".join(missing[:2]) + (" …" if len(missing) > 2 else "")
            image = f"Precompiled, whose signed images {where} lacks {lacked}: push or mirror them there"
        else:
            image = "Precompiled, with an image whose modules are signed for this kernel"
        return (
            f"✗ No mode works as-is: Secure Boot is on ({shown}) and refuses {TITLES[mode]}'s unsigned build. "
            f"What would work: Pre-installed, with {signed}; or {image}."
        )

    @staticmethod
    def _star_word(mode: str) -> str:
        """ "recommended" for a mode this release validated; a mode it did not is only "suggested" by the nodes
        (a "★ recommended" beside "not validated in this release" said two opposite things)."""
        return "suggested" if mode == "upstream" else "recommended"

    def _recommended(self) -> tuple[str, str]:
        facts = self.state.facts
        if facts is None:
            return "precompiled", "no node facts yet; precompiled is the default"
        live = getattr(self.state.preflight, "cluster_policy", None) or {}
        if ((live.get("spec") or {}).get("driver") or {}).get("enabled") is False:
            return "preinstalled", "the live ClusterPolicy sets driver.enabled=false: the hosts' own driver is in use"
        booting = [name for name, host in self.state.host_states.items() if getattr(host, "secure_boot", False)]
        release = str(self.state.get("operator.version") or self._detected_release() or "")
        rec = facts.recommend_mode(
            self.state.host_drivers, booting, precompiled_tags=self.state.precompiled_tags, operator_release=release
        )
        return rec.value, rec.reason

    def _host_driver_unknown(self) -> bool:
        """Whether the hosts may already run a driver without the wizard knowing: no host check ran, no label or
        live ClusterPolicy tells (a running operator's driver, or its pre-installed label, would)."""
        state = self.state
        facts = state.facts
        if facts is None or not facts.gpu_nodes or state.host_states or state.host_drivers:
            return False
        if state.cluster is None:  # node facts from a file: no host to check, the facts are all there is
            return False
        if getattr(state.preflight, "cluster_policy", None) is not None:
            return False
        return self._recommended()[0] != "preinstalled"

    def _mode_warning(self) -> str:
        """Why the chosen mode will not work on these nodes ("" when nothing speaks against it)."""
        from wizard.engine.facts import IMMUTABLE_OS_IDS

        facts = self.state.facts
        if self.state.get("mode") == "preinstalled":
            return self._no_host_driver_warning()
        loaded = self._host_driver_refusal()
        if loaded:
            return loaded
        if facts is None or self.state.get("mode") != "upstream":
            return ""
        immutable = sorted({n.os_id for n in facts.gpu_nodes if n.os_id in IMMUTABLE_OS_IDS})
        if not immutable:
            return ""
        return (
            f"Upstream on {', '.join(immutable)}: the OS is immutable, the driver container cannot install "
            "kernel headers or build the module there. Use Precompiled."
        )

    def _host_driver_refusal(self) -> str:
        """A containerized mode chosen over hosts whose own driver is loaded: refused, with the two ways out."""
        from screens.findings import mode_refusals

        mode = str(self.state.get("mode") or "")
        refusals = [g for g in mode_refusals(self.state, mode) if g.check == "host-driver-loaded"]
        if not refusals:
            return ""
        nodes = sorted({node for group in refusals for node in group.nodes})
        shown = ", ".join(nodes[:3]) + (f" and {len(nodes) - 3} more" if len(nodes) > 3 else "")
        versions = ", ".join(sorted({self.state.host_drivers.get(n, "") for n in nodes} - {""})) or "a host driver"
        return (
            f"{TITLES[mode]} is refused: a host driver ({versions}) is loaded on {shown}, and the driver container "
            "cannot load its own module beside it. Choose Pre-installed, or unload the host driver there and "
            "check the hosts again (Preview and apply block until then)"
        )

    def _no_host_driver_warning(self) -> str:
        """Pre-installed over hosts the host check found without a working driver: said here, not first on Preview."""
        lacking = sorted(node for node, version in self.state.host_drivers.items() if not version)
        if not lacking:
            return ""
        shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
        return (
            f"Pre-installed, but the host check found no working driver on {shown}: install one there first "
            "(Preview blocks on it), or choose a containerized mode"
        )

    def field_errors(self) -> dict[str, str]:
        """The fields' own errors, and a release line the running operator is not on where no Helm release would
        carry the operator to it: ``apply``'s preflight refuses that plan (the operator keeps running its release),
        so Mode says it, rather than letting a host finding judged against the other release disappear."""
        errors = super().field_errors()
        refused = self._release_refusal()
        if refused and "operator.version" not in errors:
            errors = {"operator.version": refused, **errors}
        return errors

    def _release_refusal(self) -> str:
        from wizard.engine.releases import Release

        preflight = self.state.preflight
        detected = self._detected_release()
        if not detected or (preflight is not None and preflight.helm_release):
            return ""  # nothing runs (the wizard installs the chosen one), or Helm upgrades it to the chosen one
        live = Release.parse_or_none(detected)
        wanted = Release.parse_or_none(str(self.state.get("operator.version") or ""))
        if live is None or wanted is None or (live.major, live.minor) == (wanted.major, wanted.minor):
            return ""
        return (
            f"the cluster runs GPU Operator {detected}, not {wanted}: apply refuses a {wanted} plan (the operator "
            f"stays {detected}); keep {detected}, or upgrade the operator itself first"
        )

    def _detected_release(self) -> str:
        preflight = self.state.preflight
        return str(getattr(preflight, "operator_release", "") or "")

    def _release_hint(self) -> str:
        detected = self._detected_release()
        return f"running in the cluster: {detected}" if detected else "no operator release detected"

    def answers_changed(self) -> None:
        """Also show the release's error beside its selector (an answers file may name an unknown one)."""
        super().answers_changed()
        error = self.field_errors().get("operator.version", "")
        note = self.query_one("#release-note", Static)
        note.update(f"✗ {error}" if error else self._release_hint())
        note.set_class(bool(error), "-error")

    def _reason_text(self, recommended: tuple[str, str]) -> str:
        if self._host_driver_unknown():
            text = (
                "? Not known yet whether the GPU hosts already run a driver (then Pre-installed; the check below "
                f"runs a probe pod per GPU node). Without one: {TITLES[recommended[0]]} — {recommended[1]}"
            )
        elif self._none_works(recommended[0]):
            text = self._none_works(recommended[0])
        else:
            mode = recommended[0]
            star = f"Suggested ({UNVALIDATED})" if mode == "upstream" else f"★ {self._star_word(mode).capitalize()}"
            text = f"{star}: {TITLES[mode]} — {recommended[1]}"
        warning = self._mode_warning()
        if warning:
            text += f"\n! {warning}"
        live = getattr(self.state.preflight, "cluster_policy", None)
        if live is not None and self.state.get("mode"):
            text = f"Running now: {TITLES[str(self.state.get('mode'))]} (live ClusterPolicy). " + text
        if self._reading_tags:
            text += f"\n{READING}"
        return text

    def on_mount(self) -> None:
        state = self.state
        if not state.get("mode"):
            self._set_mode(self._recommended()[0])
            self._preselected = str(state.get("mode"))
        if not state.get("operator.version"):
            state.set("operator.version", str(self.query_one("#release", Select).value))
        namespace = getattr(state.preflight, "operator_namespace", "") or ""
        if namespace and not state.get("operator.namespace"):
            state.set("operator.namespace", namespace)
        from screens import registry_tags

        if registry_tags.wanted(state):  # Nodes was left before its listing ended: read the registry here
            self.list_precompiled_tags()
        self._show_diagram()
        self.query_one("#modes", RadioSet).focus()
        self.call_after_refresh(self._cursor_on_chosen_mode)
        self.answers_changed()
        self.maybe_replay()

    def _cursor_on_chosen_mode(self) -> None:
        """Put the list's cursor on the chosen mode: Textual starts it on the first button, whichever is chosen,
        and a cursor block on "Precompiled" beside the ● on "Upstream" read as two answers."""
        modes = self.query_one("#modes", RadioSet)
        if modes.pressed_index >= 0:
            modes._selected = modes.pressed_index

    def _set_mode(self, mode: str) -> None:
        """Change the mode, moving image defaults along when they were the old mode's defaults."""
        from wizard.engine.defaults import default_source
        from wizard.engine.plan import DEFAULT_RELEASE, MODE_DEFAULTS, Mode

        state = self.state
        old = state.get("mode") or "precompiled"
        facts = state.facts
        oses = facts.os_tags(str(state.get("operator.version") or DEFAULT_RELEASE)) if facts is not None else []
        if old != mode:
            before, after = default_source(Mode(old), oses), default_source(Mode(mode), oses)
            for index, key in enumerate(("source", "image")):
                value = state.get(f"driver.{key}")
                if not value or value in (before[index], MODE_DEFAULTS[Mode(old)][key]):
                    state.set(f"driver.{key}", after[index] or None)
            if mode == "precompiled":
                state.set("driver.repoConfig", None)
                state.set("driver.airgapped", None)
            if mode == "upstream" and str(state.get("driver.version") or "").isdigit():
                # a precompiled branch (580) names no upstream image: the Driver step picks a version the registry holds
                state.set("driver.version", None)
        state.set("mode", mode)

    def _show_diagram(self) -> None:
        mode = self.state.get("mode") or "precompiled"
        diagram = self.query_one("#diagram", Static)
        diagram.border_title = f"{TITLES[mode]}: where the driver comes from"
        diagram.border_subtitle = (
            f"upstream is {UNVALIDATED}"
            if mode == "upstream"
            else f"{help_key(web=self.wizard.web)} compares all three"
        )
        diagram.update(MODE_DIAGRAM[mode])
        diagram.set_class(mode == "upstream", "-warning")
        rows = [f"{aspect:<12}{text}" for aspect, text in MODE_FACTS[mode]]
        self.query_one("#mode-facts", Static).update("\n".join(rows))

    _preselected = ""
    """The mode this step chose for the user (a host check's finding may replace it; never the user's own)."""

    @on(Button.Pressed, "#mode-host-check")
    def _check_hosts(self, event: Button.Pressed) -> None:
        event.stop()
        self.check_hosts()

    @work(exclusive=True, group="mode-host-check", exit_on_error=False)
    async def check_hosts(self) -> None:
        """The Nodes step's host check, from here: what it finds decides the ★ (and the mode, when the step chose it)."""
        from screens.hostcheck import run_host_check

        state = self.state
        button = self.query_one("#mode-host-check", Button)
        reason = self.query_one("#reason", Static)
        button.disabled = True

        def progress(done: int, total: int) -> None:
            reason.update(f"checking the hosts for a driver (a probe pod per GPU node): {done}/{total}…")

        try:
            await run_host_check(state, progress=progress)
        finally:
            button.disabled = False
        self._follow_recommendation()

    @work(exclusive=True, group="precompiled-tags", exit_on_error=False)
    async def list_precompiled_tags(self) -> None:
        """The pull registry's precompiled tags (:mod:`screens.registry_tags`): what it holds decides the ★."""
        from screens.registry_tags import list_precompiled_tags

        self._reading_tags = True
        self._show_recommendation()
        try:
            read = await list_precompiled_tags(self.state, self.wizard.open_registry)
        finally:
            self._reading_tags = False
        if read:
            self._follow_recommendation()
        else:
            self._show_recommendation()

    _reading_tags = False
    """The registry's tags are being read here: the ★ may still move (shown under the reason; Next waits a while)."""
    _waiting_for_tags = False
    _waited_for_tags = False

    def before_next(self) -> bool:
        """While the tags are read, Next waits for them (at most ``TAGS_WAIT_SECONDS``), then moves on: a newcomer's
        quick Next would otherwise keep the recommendation made before the registry was read."""
        if self._waiting_for_tags:  # a second Next while waiting: the wait goes on (it ends by itself)
            return False
        if not self._reading_tags or self._waited_for_tags:
            return True
        self._waiting_for_tags = True
        self.query_one(NavBar).status("reading the registry's tags before moving on…")
        self._next_after_tags()
        return False

    @work(exclusive=True, group="mode-next-after-tags", exit_on_error=False)
    async def _next_after_tags(self) -> None:
        deadline = asyncio.get_running_loop().time() + TAGS_WAIT_SECONDS
        with contextlib.suppress(Exception):
            while self._reading_tags and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.05)
        self._waiting_for_tags, self._waited_for_tags = False, True  # once: then on with what is known
        self.refresh_nav()
        if self.app.screen is self and not self.leaving:
            self.go(1)

    def _follow_recommendation(self) -> None:
        """Something new is known: the ★ moves, and so does the mode while it is the one this step chose."""
        state = self.state
        recommended = self._recommended()
        if self._preselected and state.get("mode") == self._preselected and recommended[0] != self._preselected:
            self.query_one(f"#mode-{recommended[0]}", Choice).value = True  # RadioSet.Changed sets the mode
            self._preselected = recommended[0]
        self._show_recommendation()

    def _show_recommendation(self) -> None:
        """The ★ and the reason line, as far as what is known now says."""
        recommended = self._recommended()
        known = not self._host_driver_unknown()
        for mode in MODES:
            self.query_one(f"#mode-{mode}", Choice).label = self._label(mode, self._badged(mode, recommended[0], known))
        self.query_one("#mode-host-check", Button).display = not known
        self.query_one("#reason", Static).update(self._reason_text(recommended))

    @on(RadioSet.Changed, "#modes")
    def _mode_changed(self, event: RadioSet.Changed) -> None:
        if event.pressed.name:
            self._set_mode(event.pressed.name)
            self._show_diagram()
            self.query_one("#reason", Static).update(self._reason_text(self._recommended()))
            self.answers_changed()

    @on(Select.Changed, "#release")
    def _release_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL:
            self.state.set("operator.version", str(event.value))
            self.answers_changed()
