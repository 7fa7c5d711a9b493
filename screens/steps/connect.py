"""Step 1, Connect: pick a kube context (or the demo cluster), connect, run the preflight.

The context list is read in a thread (it may import the Kubernetes client); connecting and the
preflight run in a worker bound to this screen. Each preflight failure is shown with what to do.
When no cluster is reachable the built-in demo cluster is offered right here.
"""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Label, Select, Static
from textual.widgets.select import InvalidSelectValueError
from textual.worker import Worker

from screens.state import import_facade, tildify
from screens.steps.base import StepScreen
from screens.widgets.checks import CheckList
from screens.widgets.chrome import TopBar
from wizard.bundled import DEFAULT_DEMO_SCENARIO

#: Seconds between looks at a Select still mounting (its options are applied once it is mounted).
MOUNT_POLL = 0.02
#: Preflight checks of objects the answers name (a pull Secret, the repoConfig ConfigMap): they do not
#: block Connect, since the fix may be a different answer on a later step; Preview checks them again.
PLAN_REFERENCES = frozenset({"pull-secret", "repo-config"})


def scenario_names() -> list[str]:
    """The demo scenarios the engine ships (imported on use: not needed for the first frame)."""
    return import_facade().demo_scenarios()


class ConnectStep(StepScreen):
    """Choose the cluster and check that the wizard can work on it."""

    DEFAULT_CSS = """
    #connect-row, #demo-row { height: 1; }
    #connect-row > Label, #demo-row > Label { width: 10; }
    #context, #context-wait { width: 1fr; }
    #scenario { width: 1fr; }
    #demo-row-wait { height: 1; }
    #connect-row > Button, #demo-row > Button { margin-left: 1; min-width: 12; }
    #server { height: auto; color: $text-muted; padding-left: 10; }
    #preflight-box { height: 1fr; }
    #connect-error { height: auto; color: $error; }
    #connect-error.-empty { display: none; }
    """

    def compose_body(self) -> ComposeResult:
        yield Label("Cluster", classes="section -first")
        with Horizontal(id="connect-row"):
            yield Label("Context")
            # Selects are mounted when their options arrive (after the first frame)
            yield Static("reading kubeconfig…", id="context-wait", classes="muted")
            yield Button("Connect", id="connect", compact=True, variant="primary")
        yield Static("", id="server", markup=False)
        # the scenario list needs the engine: the demo row is mounted after the first frame
        yield Static("Demo      …", id="demo-row-wait", classes="muted")
        yield Label("Preflight", classes="section")
        yield Static("", id="connect-error", markup=False, classes="-empty")
        with VerticalScroll(id="preflight-box", classes="scroll-area"):
            yield CheckList("not connected yet", id="preflight")

    def on_mount(self) -> None:
        self._kube_contexts: list[str] = []
        """Contexts of the kubeconfig, once read."""
        self._kube_current: str | None = None
        self._pending_options: dict[str, tuple[list[str], str | None, str]] = {}
        """Options for a Select still mounting, applied once it is mounted."""
        self.refresh_nav()
        # Importing the engine holds the GIL; let the first frame reach the terminal before it starts.
        self.wizard.after_first_frame(self._start)

    def _start(self) -> None:
        state = self.state
        if state.cluster is not None and state.preflight is not None:
            self._load_contexts(auto_connect=False)
            self._show_connected()
            self.find_live_findings()  # the operator moved on since
            self.call_later(self._replay_when_settled)
            return
        if state.demo is not None:
            self._load_contexts(auto_connect=False)
            self.connect(demo=state.demo)
        else:
            self._load_contexts(auto_connect=True)
        self.refresh_nav()

    # -- contexts ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="contexts", exit_on_error=False)
    def _load_contexts(self, auto_connect: bool) -> None:
        """Read the kubeconfig's contexts (in a thread: it may import the Kubernetes client)."""
        state = self.state
        self.app.call_from_thread(self._show_scenarios, scenario_names())
        try:
            contexts, current = import_facade().kube_contexts(state.kubeconfig)
        except Exception as exc:  # no kubeconfig, unreadable file: offer the demo instead
            self.app.call_from_thread(self._no_contexts, exc, auto_connect)
            return
        self.app.call_from_thread(self._show_contexts, contexts, current, auto_connect)

    def _put_select(self, placeholder: str, select_id: str, options: list[str], value: str | None, prompt: str) -> None:
        """Show a Select (replacing its placeholder the first time) with these options.

        A Select checks its value against its options when it mounts: changing the options of one
        still mounting (a thread's answer can arrive between its compose and its mount) made it
        reject the value it was built with. So a Select is only changed once mounted, and a value
        is only ever set when it is one of the options.
        """
        found = self.query(f"#{select_id}")
        if found:
            select: Select[str] = found.first(Select)
            if not select.is_mounted:  # try again after the mount, with the latest options by then
                first_wait = select_id not in self._pending_options
                self._pending_options[select_id] = (options, value, prompt)
                if first_wait:  # a timer, not call_after_refresh: that would spin without letting the mount run
                    self.set_timer(MOUNT_POLL, partial(self._put_pending, select_id))
                return
            self._pending_options.pop(select_id, None)
            select.set_options([(o, o) for o in options])
            select.prompt = prompt
            if value in options:
                select.value = value
            return
        select = Select(
            [(o, o) for o in options],
            value=value if value in options else Select.NULL,
            prompt=prompt,
            allow_blank=select_id != "scenario",
            id=select_id,
            compact=True,
        )
        waiting = self.query_one(f"#{placeholder}")
        row = waiting.parent
        assert isinstance(row, Widget)
        row.mount(select, before=waiting)
        waiting.remove()

    def _put_pending(self, select_id: str) -> None:
        pending = self._pending_options.pop(select_id, None)
        if pending is not None and self.query(f"#{select_id}"):
            self._put_select("", select_id, *pending)

    def _connected_scenario(self) -> str:
        """The scenario of the demo server connected to (its kubeconfig marker names it), "" for none."""
        info = self.state.info
        return info.demo_scenario if info is not None and info.demo else ""

    def _show_demo_scenario(self) -> None:
        """The Demo dropdown shows the scenario of the demo server connected to, not the default (defect 15): the one
        this session started (a scenario file as it was given), else the one the server's kubeconfig marker names."""
        scenario = self.state.demo or self._connected_scenario()
        for select in self.query("#scenario").results(Select):
            if scenario and select.is_mounted:
                with contextlib.suppress(InvalidSelectValueError):  # a scenario this install does not ship
                    select.value = scenario

    def _show_scenarios(self, names: list[str]) -> None:
        own = self.state.demo
        if own and own not in names:  # a scenario file this session started with: offered as it was given
            names = [*names, own]
        candidates = (own, self._connected_scenario(), DEFAULT_DEMO_SCENARIO)  # own: the demo this session runs
        current = next((name for name in candidates if name and name in names), names[0])
        if self.query("#scenario"):
            self._put_select("", "scenario", names, current, "demo scenario")
            return
        select: Select[str] = Select(
            [(n, n) for n in names], value=current, allow_blank=False, id="scenario", compact=True
        )
        row = Horizontal(Label("Demo"), select, Button("Try the demo cluster", id="demo", compact=True), id="demo-row")
        waiting = self.query_one("#demo-row-wait")
        self.query_one("#body").mount(row, before=waiting)
        waiting.remove()

    def _context_choices(self) -> list[str]:
        """The kubeconfig's contexts, plus the connected one when it is not among them (the demo's)."""
        choices = list(self._kube_contexts)
        info = self.state.info
        if info is not None and info.context and info.context not in choices:
            choices.append(info.context)
        return choices

    def _wanted_context(self) -> str | None:
        """The context to show selected: the connected one, else the one asked for, else the current one."""
        info = self.state.info
        if info is not None and self.state.cluster is not None:
            return info.context
        return self.state.context or self._kube_current

    def _refresh_contexts(self, prompt: str) -> None:
        """Show every context choice, the wanted one selected when it is a choice (never otherwise)."""
        self._put_select("context-wait", "context", self._context_choices(), self._wanted_context(), prompt)

    def _show_contexts(self, contexts: list[str], current: str | None, auto_connect: bool) -> None:
        self._kube_contexts, self._kube_current = list(contexts), current
        wanted = self.state.context or current
        self._refresh_contexts("choose a context" if self._context_choices() else "no contexts in kubeconfig")
        if auto_connect and wanted in contexts:
            self.connect(context=wanted)
        elif auto_connect and wanted:
            self._offer_demo(f"Context {wanted} is not in the kubeconfig: choose one of its contexts.")
        elif auto_connect:
            self._offer_demo("No kube context to connect to.")

    def _no_contexts(self, error: BaseException, auto_connect: bool) -> None:
        self._kube_contexts, self._kube_current = [], None
        self._refresh_contexts("demo" if self._context_choices() else "no kubeconfig")
        message = tildify(str(getattr(error, "message", "") or error))
        if auto_connect:
            self._offer_demo(f"No cluster configured: {message}")

    def _error_text(self, text: str) -> None:
        error = self.query_one("#connect-error", Static)
        error.update(text)
        error.set_class(not text, "-empty")

    def _offer_demo(self, why: str) -> None:
        self._error_text(f"{why}\nTry the built-in demo cluster above.")
        for button in self.query("#demo"):  # mounted once the scenario list is known
            button.focus()
        self.refresh_nav()

    # -- connecting -------------------------------------------------------------------------

    @on(Button.Pressed, "#connect")
    def _connect_pressed(self) -> None:
        found = self.query("#context")
        value = found.first(Select).value if found else Select.NULL
        if value is Select.NULL:
            self.notify("Choose a context first.", severity="warning")
            return
        if value not in self._kube_contexts and self.state.is_demo:  # the demo's own context: restart it
            self._demo_pressed()
            return
        self.state.demo = None
        self.connect(context=str(value))

    @on(Button.Pressed, "#demo")
    def _demo_pressed(self) -> None:
        found = self.query("#scenario")
        scenario = str(found.first(Select).value) if found else (self.state.demo or DEFAULT_DEMO_SCENARIO)
        self.connect(demo=scenario)

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def connect(self, *, context: str | None = None, demo: str | None = None) -> None:
        """Connect to a context (or start the demo cluster), then run the preflight."""
        app = self.wizard
        state = self.state
        self._busy(f"Starting the demo cluster ({demo})…" if demo else f"Connecting to {context}…")
        module = await asyncio.to_thread(import_facade)
        if demo:
            kubeconfig: str | None = await app.start_demo(demo)
            context = None
        else:
            await app.stop_demo()
            state.demo = None
            kubeconfig = state.kubeconfig
        cluster = await module.Cluster.connect(kubeconfig=kubeconfig, context=context)
        await app.replace_cluster(cluster)
        state.context = cluster.info.context
        if getattr(cluster.info, "insecure", False):
            self.notify(
                f"TLS verification is off for context {cluster.info.context} (insecure-skip-tls-verify in the "
                "kubeconfig): the API server's identity is not checked.",
                title="Insecure connection",
                severity="warning",
                timeout=15,
            )
        self._show_connected(running=True)
        # the TUI installs a missing operator itself (Apply says what and asks): its absence is no failure
        state.preflight = await cluster.preflight(state.plan(), install_operator=True)
        self._show_connected()
        self.find_live_findings()
        await app.offer_resume()
        app.prefill_from_live()
        self._operand_registry_from_operator()
        await self._replay_when_settled()

    def _operand_registry_from_operator(self) -> None:
        """A live ClusterPolicy whose operands come from a private registry, or an operator running from one: every
        other image comes from there too, unless the answers say otherwise (the Driver step shows it; a pre-installed
        plan, which skips that step, needs it as well). Answers naming no registry do not own the live policy's
        image repositories: Preview would otherwise list public images the cluster never pulls."""
        from wizard.engine.operand_images import adopted_registry

        state = self.state
        preflight = state.preflight
        if preflight is None or state.get("driver.operandRegistry"):
            return
        registry, _ = adopted_registry(
            state.get("driver.registryMirrors") or {},
            preflight.operator_image,
            preflight.operator_release,
            (preflight.cluster_policy or {}).get("spec"),
        )
        if registry:
            state.set("driver.operandRegistry", registry)

    async def _replay_when_settled(self) -> None:
        await self.wizard.settled.wait()
        self.refresh_nav()
        self.maybe_replay()

    @work(exclusive=True, group="live-findings", exit_on_error=False)
    async def find_live_findings(self) -> None:
        """An upgrade under way, failing driver pods: shown with the preflight, in Apply's and Verify's words."""
        cluster = self.state.connected()
        self.state.live_findings = await cluster.live_findings()
        self._show_connected()

    def _busy(self, text: str) -> None:
        self._error_text("")
        self.query_one("#preflight", CheckList).update(text)
        self.query_one("#server", Static).update("")
        self.refresh_nav()

    def _show_connected(self, running: bool = False) -> None:
        state = self.state
        info = state.info
        if info is None:
            return
        server = "built-in demo cluster on loopback (simulated GPU Operator)" if info.demo else info.server
        version = f" · Kubernetes {info.version}" if info.version else ""
        self.query_one("#server", Static).update(f"{server}{version}")
        self.query_one(TopBar).show_cluster(self.wizard.cluster_label(), state.is_demo)
        self._refresh_contexts("choose a context")
        self._show_demo_scenario()
        self._error_text("")
        checks = self.query_one("#preflight", CheckList)
        if running or state.preflight is None:
            checks.update("running preflight…")
        else:
            checks.show([*state.preflight.checks, *state.live_findings], "no checks ran")
            if any(not c.ok and c.check in PLAN_REFERENCES for c in state.preflight.checks):
                self._error_text(
                    "! The answers name a Secret or ConfigMap the cluster lacks: create it, or change the "
                    "answer on the Driver step (Preview checks again before anything is applied)."
                )
            self._focus_next_when_ready()
        self.refresh_nav()

    def _focus_next_when_ready(self) -> None:
        """Connected and nothing blocks: Next takes the focus from Connect (Enter then moves on, not reconnects).

        Only from the Connect button or from nowhere: a user who moved the focus keeps it where they put it.
        """
        focused = self.focused
        if self.blocker() or (focused is not None and focused.id != "connect"):
            return
        for button in self.query("NavBar #next"):
            button.focus()

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        if worker.group == "connect":
            message = tildify(str(getattr(error, "message", "") or error))
            self._offer_demo(f"✗ {message}")
            self.query_one("#preflight", CheckList).update("not connected")
        super().worker_failed(worker, error)

    # -- navigation -------------------------------------------------------------------------

    def blocker(self) -> str:
        state = self.state
        if state.cluster is None:
            return "connect to a cluster (or try the demo)"
        if state.preflight is None:
            return "preflight is running…"
        failed = [c for c in state.preflight.checks if not c.ok and c.check not in PLAN_REFERENCES]
        if failed:
            return f"{len(failed)} preflight check(s) failed: fix them, then Connect again"
        return ""
