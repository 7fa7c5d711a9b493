"""The gpu-wizard Textual app: owns the wizard state, the cluster connection and navigation.

Started by ``gpu-wizard`` (current kube context) or ``gpu-wizard --demo [SCENARIO]`` through
:func:`run`. The App holds one :class:`~screens.state.WizardState`, the connected
``wizard.cluster.facade.Cluster`` and, in demo mode, the built-in ``DemoCluster`` running on this very
event loop. Step screens ask to move with :class:`~screens.steps.base.StepScreen.Navigate`; the App
saves the answers and swaps the screen. Only Textual is imported before the first frame; the
engine (pydantic, the Kubernetes client, aiohttp) is loaded afterwards. Beside it: :mod:`screens.idle`
(what waits for the first frame, the warm-up thread, the idle-time garbage collection) and
:mod:`screens.resume` (the answers a run starts from).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from screens import keys, resume
from screens.flow import STEP_NAMES, STEPS, step_named
from screens.host import Finish, SaveProgress, ShowHelp, Verified, WizardHost
from screens.idle import IdleWork, MemoryPolicy
from screens.inputorder import InputOrder, InputSettled
from screens.state import WizardState, display_path, import_facade
from screens.steps import make_screen
from screens.steps.base import StepScreen
from screens.styles import app_css
from wizard.engine.steps import CONNECT
from wizard.paths import backups_dir, state_dir

HELP_SCREEN = "help"
"""The name the one help dialog is installed under (:meth:`WizardApp.show_help`)."""

#: Simulated operator pace for ``--demo`` (seconds per reconcile step): visible, not slow.
DEMO_STEP_DELAY = 0.3


class WizardApp(App[int]):
    """The eight-step wizard from connect to a verified install."""

    TITLE = "gpu-wizard"
    CSS = app_css()
    BINDINGS: ClassVar[list[Binding]] = [  # type: ignore[assignment]
        Binding(keys.SAVE.terminal, "save_answers", "Save", show=False),
        Binding(keys.QUIT.terminal, "quit", "Quit", priority=True),
        # bound here, not left to Textual: Textual binds its ctrl+p only when no binding names the palette
        Binding(keys.PALETTE.terminal, "command_palette", "Palette", show=False, priority=True),
        # keys a browser leaves to the page (gpu-wizard serve; see screens.keys)
        Binding(keys.SAVE.browser, "save_answers", "Save", show=False),
        Binding(keys.PALETTE.browser, "command_palette", "Palette", show=False, priority=True),
    ]

    def __init__(
        self,
        *,
        demo: str | None = None,
        answers: str | None = None,
        kubeconfig: str | None = None,
        context: str | None = None,
        step_delay: float = DEMO_STEP_DELAY,
        backup_dir: Path | None = None,
        report_dir: Path | None = None,
        start_step: str = CONNECT.name,
        replay: bool = True,
        web: bool = False,
        memory: MemoryPolicy | None = None,
        chart: str | None = None,
    ) -> None:
        super().__init__()
        self.state = WizardState(demo=demo, kubeconfig=kubeconfig, context=context, chart=chart)
        """Everything the steps share."""
        self.answers_file = Path(answers).expanduser() if answers else None
        self.step_delay = step_delay
        """Pace of the demo cluster's simulated operator."""
        self.backup_dir = backup_dir or backups_dir()
        """Where Apply writes the live objects it replaces."""
        self.report_dir = report_dir or Path.cwd()
        """Default folder for exported reports and manifests."""
        self.settled = asyncio.Event()
        """Set once the answers are loaded and any resume question is answered."""
        self.reached = 0
        """Index of the furthest step shown (the palette jumps only up to it)."""
        self.pending_moves: list[int] = []
        """Back (-1) and Next (+1) keys pressed while a step was being left, for the step shown next."""
        self.replay_answers = replay
        """Advance through the steps an ``answers`` file already completes."""
        self.start_step = start_step
        """The first step shown (tests and screenshots start later steps on prepared state)."""
        self.web = web
        """Served to a browser (``gpu-wizard serve``): the footer and F1 show the browser's keys."""
        self._demo_cluster: Any = None
        self.exit_code = 0
        self.closing_line = ""
        """The line printed once the wizard closed (its verdict, or where a Ctrl+Q left it)."""
        self.idle = IdleWork(self, web=web, memory=memory)
        """Work held back until the first frame, warmed up in a thread, or left for when the user is idle."""
        self.input_order = InputOrder(self, self._deliver_input)
        """Keys and pastes one at a time, each to the widget focused once the one before was handled."""

    # -- start-up ---------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        """Starting at Connect, that step is the bottom screen: one screen to build before the first frame, not two."""
        if self.start_step == CONNECT.name:
            return make_screen(CONNECT.name)
        return super().get_default_screen()

    def on_mount(self) -> None:
        self.state.step = self.start_step
        self.reached = STEP_NAMES.index(self.start_step)
        if self.start_step == CONNECT.name:
            self.idle.after_first_frame(partial(resume.load_answers, self))
        else:  # a later step needs its answers before it is built
            resume.load_answers(self)
            self.push_screen(make_screen(self.start_step))

    def on_ready(self) -> None:
        """Textual's Ready: the DOM is built and the first frame displayed."""
        self.idle.first_frame_shown()

    async def on_event(self, event: events.Event) -> None:
        self.idle.note_event(event)
        if not self.input_order.hold(event):
            await self._deliver_input(event)
            self.input_order.delivered(event)

    async def _deliver_input(self, event: events.Event) -> None:
        await super().on_event(event)

    async def on_input_settled(self, message: InputSettled) -> None:
        await self.input_order.settled(message)

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the first frame is displayed (at once, later on)."""
        self.idle.after_first_frame(callback)

    def release_input(self) -> None:
        """Deliver the keys typed while the step before was left (:mod:`screens.inputorder`)."""
        self.input_order.release()

    # -- messages from the steps --------------------------------------------------------------

    def on_step_screen_navigate(self, message: StepScreen.Navigate) -> None:
        """Save the answers, then show the requested step."""
        self.save_progress(message.target)
        self.goto(message.target)

    def on_save_progress(self, message: SaveProgress) -> None:
        self.save_progress(message.step)

    def on_show_help(self, message: ShowHelp) -> None:
        self.show_help(message.title, message.text)

    def on_finish(self, message: Finish) -> None:
        self.finish()

    def on_verified(self, message: Verified) -> None:
        self.exit_code = 0 if message.ok else 1

    # -- navigation -------------------------------------------------------------------------

    def queue_move(self, direction: int) -> None:
        """Keep a Back/Next key pressed while the screen is switching; the next step replays it."""
        self.pending_moves.append(direction)

    def take_pending_moves(self) -> list[int]:
        """The queued Back/Next keys, oldest first (the queue is emptied)."""
        moves, self.pending_moves = self.pending_moves, []
        return moves

    def show_help(self, title: str, text: str) -> None:
        """F1: the help dialog. One dialog serves the whole session: built on the first F1, its text swapped
        on the next ones, so a later F1 is a screen switch and one text's layout, not a dialog composed and
        mounted anew (about 22 turns of the loop, each waiting behind a verification's work)."""
        from screens.dialogs import HelpDialog

        if self.is_screen_installed(HELP_SCREEN):
            dialog = self.get_screen(HELP_SCREEN)
            assert isinstance(dialog, HelpDialog)
            dialog.show(title, text)
        else:
            self.install_screen(HelpDialog(title, text), name=HELP_SCREEN)
        self.push_screen(HELP_SCREEN)

    def goto(self, name: str) -> None:
        """Show step ``name`` (a fresh screen; the old one and its workers go away)."""
        step = step_named(name)
        self.state.step = name
        self.reached = max(self.reached, STEP_NAMES.index(name))
        current = self.screen
        if isinstance(current, StepScreen) and len(self.screen_stack) > 1:
            self.switch_screen(make_screen(step.name))
        elif isinstance(current, StepScreen):
            # the first Connect is the bottom screen (see get_default_screen): it stays, idle, under the others
            self.workers.cancel_node(current)
            self.push_screen(make_screen(step.name))
        else:
            self.push_screen(make_screen(step.name))

    def save_progress(self, step: str) -> bool:
        """Save answers and the resume point; a failure is a dialog (after the next screen is up), never fatal."""
        try:
            self.state.save(step)
        except OSError as exc:
            from screens.dialogs import ErrorDialog
            from screens.errors import describe_error

            self.call_after_refresh(self.push_screen, ErrorDialog(*describe_error(exc)))
            return False
        return True

    def finish(self) -> None:
        """Past the last step: leave with 0 when verification passed, else 1 saying why (never silently)."""
        self.leave(self.finish_message())

    async def action_quit(self) -> None:
        """Ctrl+Q: leave at once, unless work is under way (an apply, a rollout, a verification): then ask first."""
        from screens.dialogs import ConfirmDialog
        from screens.steps.base import StepScreen

        screen = self.screen
        busy = screen.busy() if isinstance(screen, StepScreen) else ""
        if not busy:
            self.leave(self.quit_message(""))
            return
        body = (
            f"**{busy}.** Quitting stops the wizard's watch, not the operator: it carries on in the cluster.\n\n"
            "Your answers are saved; run gpu-wizard again to resume here."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.leave(self.quit_message(busy))

        self.push_screen(ConfirmDialog("Quit while this runs?", body, yes="Quit", no="Stay"), answered)

    def leave(self, line: str) -> None:
        """Close the wizard with ``line`` printed after it (kept in :attr:`closing_line`)."""
        self.closing_line = line
        self.exit(self.exit_code, message=line)

    def quit_message(self, busy: str) -> str:
        """The closing line of a Ctrl+Q: where the wizard stopped, what still runs, where the answers are."""
        from screens.flow import step_named

        answers = display_path(self.state.answers_path)
        where = step_named(self.state.step).title
        if busy:
            return (
                f"gpu-wizard: quit at {where} while {busy[0].lower()}{busy[1:]}: the cluster carries on; "
                f"`gpu-wizard verify --answers {answers}` checks it (answers in {answers})"
            )
        return f"gpu-wizard: quit at {where}; answers in {answers} (run gpu-wizard again to resume)"

    def finish_message(self) -> str:
        """The one line printed after the wizard closes: the verdict, and where the answers are."""
        state = self.state
        checks = [c for c in state.checks if c.check != "summary"]  # the verdict line is no check of its own
        failed = [c for c in checks if not c.ok]
        answers = display_path(state.answers_path)
        if not state.checks:
            return f"gpu-wizard: finished without a verification; answers in {answers}"
        if failed:
            nodes = sorted({c.node or "cluster" for c in failed})
            return (
                f"gpu-wizard: not verified: {len(failed)} check(s) failed on {', '.join(nodes[:5])}"
                f"{' …' if len(nodes) > 5 else ''}; run `gpu-wizard verify` or the wizard again (answers in {answers})"
            )
        return f"gpu-wizard: verified, {len(checks)} checks passed; answers in {answers}"

    def cluster_label(self) -> str:
        """``context · server`` of the connected cluster, for the title bar."""
        info = self.state.info
        if info is None:
            return "not connected"
        if info.demo:
            return info.context
        return f"{info.context} · {info.server}"

    # -- cluster ----------------------------------------------------------------------------

    async def start_demo(self, scenario: str) -> str:
        """Start (or restart) the built-in demo cluster on this loop; returns its kubeconfig."""
        await self.stop_demo()
        facade = await asyncio.to_thread(import_facade)
        self._demo_cluster = await facade.start_demo(scenario, step_delay=self.step_delay)
        demo = self._demo_cluster
        self.state.demo = scenario
        return str(demo.kubeconfig_path)

    @property
    def demo_cluster(self) -> Any:
        """The running demo cluster (None when none runs)."""
        return self._demo_cluster

    async def offer_resume(self) -> None:
        """Once connected: offer to resume a saved run of this cluster (:func:`screens.resume.offer_resume`)."""
        await resume.offer_resume(self)

    async def stop_demo(self) -> None:
        """Stop the demo cluster if one runs."""
        demo, self._demo_cluster = self._demo_cluster, None
        if demo is not None:
            await demo.__aexit__(None, None, None)

    async def replace_cluster(self, cluster: Cluster | None) -> None:
        """Adopt a newly connected cluster, closing the previous one."""
        old = self.state.adopt_cluster(cluster)
        if old is not None and old is not cluster:
            await old.close()

    def prefill_from_live(self) -> bool:
        """Start an upgrade from what runs: answers not yet given come from the live ClusterPolicy."""
        state = self.state
        preflight = state.preflight
        if preflight is None or preflight.cluster_policy is None or state.answers_given or state.get("mode"):
            return False
        from wizard.cluster.facade import plan_from_live

        try:
            plan = plan_from_live(
                preflight.cluster_policy,
                preflight.nvidia_drivers,
                release=preflight.operator_release,
                namespace=preflight.operator_namespace,
            )
        except Exception as exc:  # a live policy the plan model rejects: start from scratch, say why
            self.notify(str(getattr(exc, "message", exc)), title="Live ClusterPolicy not reused", severity="warning")
            return False
        state.replace_answers(plan.answers_dict())
        self.notify("Answers prefilled from the live ClusterPolicy: change what the upgrade needs.", title="Upgrade")
        return True

    @contextlib.asynccontextmanager
    async def open_registry(self, plan: Any = None, hosts: list[str] | None = None) -> AsyncIterator[Any]:
        """A registry client for the image checks of ``plan``, or None on a demo that simulates no registry.

        One path for every cluster: the connected ``Cluster`` says how its images are reached
        (``registry_options``). A real cluster: the registries themselves. The demo cluster, started
        here or reached through a kubeconfig: its own registry for the simulated names (asking the
        real network about them would only measure this machine's DNS).
        """
        from wizard.cluster.facade import open_registry
        from wizard.engine.registry_routes import registry_hosts

        cluster = self.state.cluster
        if hosts is None:
            hosts = registry_hosts(plan) if plan is not None else []
        mirrors = plan.driver.registryMirrors if plan is not None else {}
        options = cluster.registry_options(hosts, mirrors) if cluster is not None else {}
        if self.state.is_demo and not options:
            yield None
            return
        ca_files = [plan.driver.registryCA] if plan is not None and plan.driver.registryCA else []
        host_config = plan.driver.hostRegistryConfig if plan is not None else True
        origins = dict.fromkeys(mirrors, "the Driver step's registry mirrors")
        # built in a thread: the client's TLS context loads the system CA store (a stall on the loop),
        # and this machine's registries.conf, hosts.toml and auth files are read. A CA file that cannot be
        # used fails each image check with one line naming it, shown beside the images.
        registry = await asyncio.to_thread(
            open_registry,
            cluster,
            hosts,
            mirrors=mirrors,
            ca_files=ca_files,
            host_config=host_config,
            mirror_origins=origins,
        )
        async with registry as client:
            yield client

    async def on_unmount(self) -> None:
        self.idle.ended()
        cluster, self.state.cluster = self.state.cluster, None
        if cluster is not None:
            with contextlib.suppress(Exception):  # closing is best effort at exit
                await asyncio.wait_for(cluster.close(), 5)
        await self.stop_demo()

    # -- last resort ------------------------------------------------------------------------

    # The one private Textual method overridden, on purpose: Textual has no public hook for an exception no
    # handler caught (every message pump, timer and worker calls ``App._handle_exception``), and without it
    # the user gets a screenful of Rich traceback with the locals of every frame (a token among them). It
    # calls Textual's own first (the return code, the re-raise under ``run_test``) and then puts one line in
    # place of the traceback in what Textual prints on exit. tests/test_tui_offline.py pins the Textual code
    # it relies on (a changed Textual fails there, not at a user's crash).
    def _handle_exception(self, error: Exception) -> None:
        """A bug got past every handler: keep the traceback for a report, show the user one clear line.

        Errors a user can fix never come here (workers turn them into dialogs); tests still see the
        exception re-raised.
        """
        crash_log = self._write_crash_log(error)
        super()._handle_exception(error)
        if "debug" not in self.features:
            self._exit_renderables[:] = [
                f"gpu-wizard stopped on an unexpected error: {type(error).__name__}: {error}\n"
                "Your answers are saved after each step: run the same command again to resume.\n"
                f"Details for a bug report: {crash_log}"
            ]

    @staticmethod
    def _write_crash_log(error: BaseException) -> str:
        """The traceback in ``crash.log`` (0600: it may name the cluster and its objects)."""
        import traceback

        from wizard.atomic_write import write_private

        path = state_dir() / "crash.log"
        try:
            write_private(path, "".join(traceback.format_exception(error)))
        except OSError as exc:
            return f"(could not write the crash log: {exc})"
        return display_path(path)

    # -- commands ---------------------------------------------------------------------------

    def action_save_answers(self) -> None:
        if self.save_progress(self.state.step):
            self.notify(f"Saved to {display_path(self.state.answers_path)}", title="Answers")

    def action_save_answers_as(self) -> None:
        from screens.dialogs import PathDialog

        def chosen(path: str | None) -> None:
            if path:
                self.state.answers_path = Path(path)
                self.state.answers_doc = None
                self.action_save_answers()

        self.push_screen(PathDialog("Save answers as", display_path(self.state.answers_path)), chosen)

    def action_open_report(self) -> None:
        from screens.report import export_report

        export_report(self)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for index, step in enumerate(STEPS):
            if index <= self.reached and step.applies(self.state) and step.name != self.state.step:
                yield SystemCommand(
                    f"Jump to step {index + 1}: {step.title}",
                    f"Go to the {step.title} step",
                    partial(self.goto, step.name),
                )
        yield SystemCommand(
            "Save answers", f"Write {display_path(self.state.answers_path)} now", self.action_save_answers
        )
        yield SystemCommand("Save answers as…", "Write the answers to another file", self.action_save_answers_as)
        if hasattr(screen, "action_save_bundle"):  # Preview: the plan as a Helm, helmfile, Argo CD or Flux bundle
            yield SystemCommand(
                "Save GitOps bundle…",
                "Write the plan for Helm, helmfile, Argo CD or Flux (values, image lists, checksums)",
                screen.action_save_bundle,
            )
        yield SystemCommand(
            "Open report", "Export the verification report (Markdown and JSON)", self.action_open_report
        )
        yield SystemCommand("Switch theme", "Pick another colour theme", self.action_change_theme)
        yield SystemCommand("Help", f"Help for this step ({keys.help_key(web=self.web)})", self._help)
        yield SystemCommand("Quit", "Leave the wizard (answers are saved after each step)", self.action_quit)

    def _help(self) -> None:
        if isinstance(self.screen, StepScreen):
            self.screen.action_help()


def run(args: object, memory: MemoryPolicy | None = None) -> int:
    """Entry point used by ``gpu-wizard`` (see ``wizard.launch``): ``args`` holds the TUI's options, each
    read with its default (no options at all: an empty namespace, no parser built); ``memory`` the memory
    policy the entry point hands the app."""
    app = WizardApp(
        memory=memory,
        demo=getattr(args, "demo", None),
        answers=getattr(args, "tui_answers", None),
        kubeconfig=getattr(args, "tui_kubeconfig", None),
        context=getattr(args, "tui_context", None),
        web=bool(getattr(args, "web", False)),
        chart=getattr(args, "tui_chart", None),
    )
    result = app.run()
    if isinstance(result, int):
        return result
    return app.return_code or app.exit_code


if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster

    def _the_app_is_the_host(app: WizardApp) -> WizardHost:
        """mypy checks here that the App answers everything steps may ask of it (:class:`~screens.host.WizardHost`)."""
        return app
