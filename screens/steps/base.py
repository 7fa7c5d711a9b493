"""The base class of every step screen: frame, Back/Next, F1 help, replay, worker errors.

A step screen composes its body in :meth:`StepScreen.compose_body`, reads and writes answers
through ``self.state``, and says whether Next may proceed in :meth:`StepScreen.blocker`. Moving on
is a message (:class:`StepScreen.Navigate`) that the App handles; the screen never switches screens
itself. Workers started here die with the screen (Textual binds them to it); a worker that fails
becomes an :class:`~screens.dialogs.ErrorDialog` saying what to do.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Checkbox
from textual.worker import Worker, WorkerState

from screens import keys
from screens.errors import describe_error
from screens.flow import STEPS, neighbour, step_named
from screens.focusrow import MarksFocusedRow
from screens.host import Finish, ShowHelp, WizardHost, host_of
from screens.widgets.chrome import KeyHints, NavBar, StepStrip, TopBar

#: How long the "Not yet" toast stays; the same refusal is not repeated while it shows.
REFUSAL_TOAST_SECONDS = 5.0

if TYPE_CHECKING:
    from screens.state import WizardState


class StepScreen(MarksFocusedRow, Screen[None]):
    """One wizard step. Subclasses set ``HELP`` and implement ``compose_body``; ``STEP`` and ``FIELDS`` come
    from the entry of :data:`screens.flow.STEPS` that names the class as its screen (the step is declared once)."""

    STEP: ClassVar[str] = ""
    """The step's name in :data:`screens.flow.STEPS` (set for each class that entry names, inherited below it)."""
    FIELDS: ClassVar[tuple[str, ...]] = ()
    """Answers keys (prefixes) the step owns (:attr:`wizard.engine.steps.StepSpec.fields`)."""
    HELP: ClassVar[str] = ""
    """Markdown shown by F1."""
    NEXT_LABEL: ClassVar[str] = "Next ▶"
    _last_refusal: tuple[str, float] = ("", 0.0)
    _shown_before = False
    _leaving = False
    """A Navigate is on its way: keys from now on belong to the step shown next."""
    _host: WizardHost | None = None

    BINDINGS: ClassVar[list[Binding]] = [  # type: ignore[assignment]
        Binding(keys.BACK.terminal, "back", "Back"),
        Binding(keys.NEXT.terminal, "next", "Next"),
        Binding(keys.HELP.terminal, "help", "Help"),
        # the same actions on keys a browser leaves to the page (gpu-wizard serve)
        Binding(keys.NEXT.browser, "next", "Next", show=False),
        Binding(keys.HELP.browser, "help", "Help", show=False),
    ]

    DEFAULT_CSS = """
    StepScreen {
        layout: vertical;
        & > #body { height: 1fr; padding: 0 1; }
    }
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Take ``STEP`` and ``FIELDS`` from the flow's entry naming this class (a class no entry names,
        a test's subclass say, keeps its parent's)."""
        super().__init_subclass__(**kwargs)
        path = f"{cls.__module__}.{cls.__qualname__}"
        for step in STEPS:
            if step.screen == path:
                cls.STEP, cls.FIELDS = step.name, step.fields

    class Navigate(Message):
        """Ask the App to show another step (``target`` by name)."""

        def __init__(self, target: str) -> None:
            self.target = target
            super().__init__()

    @property
    def wizard(self) -> WizardHost:
        """What this step may ask of the App (:class:`~screens.host.WizardHost`); what it tells the App is a message."""
        if self._host is None:
            self._host = host_of(self.app)
        return self._host

    @property
    def leaving(self) -> bool:
        """A Navigate is on its way: keys wait for the step shown next (:mod:`screens.inputorder`)."""
        return self._leaving

    @property
    def state(self) -> WizardState:
        """The shared wizard state."""
        return self.wizard.state

    def compose(self) -> ComposeResult:
        state = self.state
        step = step_named(self.STEP)
        number = [s.name for s in STEPS].index(self.STEP) + 1
        skipped = frozenset(s.name for s in STEPS if not s.applies(state))
        yield TopBar(f"{number}/{len(STEPS)} {step.title}", self.wizard.cluster_label(), state.is_demo)
        yield StepStrip(self.STEP, skipped)
        with Vertical(id="body"):
            yield from self.compose_body()
        yield NavBar(back=neighbour(self.STEP, -1, state) is not None, next_label=self.NEXT_LABEL)
        yield KeyHints(web=self.wizard.web)

    def compose_body(self) -> ComposeResult:
        """The step's own widgets."""
        yield from ()

    # -- the first frame ---------------------------------------------------------------------
    # Textual builds a new screen's first frame in one turn of the loop: it styles every widget as it is
    # mounted, styles them all again when the screen is shown (ScreenResume), lays the screen out, and
    # lays it out once more for the Resize that first layout sends the screen itself. For a form of
    # 50-100 widgets that turn held the loop long enough to notice; the two handlers below skip the repeats.

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown for the first time: its widgets were styled as they were mounted, moments ago."""
        if not self._shown_before:
            self._shown_before = True
            event.refresh_styles = False  # read by Textual's own handler, which runs after this one
            if self.wizard.pending_moves:
                self.call_after_refresh(self._replay_pending_moves)
        self.call_after_refresh(self.wizard.release_input)  # keys typed while the step before was left

    def on_resize(self, event: events.Resize) -> None:
        """A resize to the size the screen is laid out at already: Textual's layout again would change nothing.

        That is the Resize a new screen's first layout sends itself; a terminal's resize arrives
        while the screen still has its old size, and Textual lays it out as usual.
        """
        if event.size == self.outer_size:
            event.prevent_default()  # Screen's own handler: the layout of this screen and the one under it

    # -- navigation -------------------------------------------------------------------------

    def blocker(self) -> str:
        """Why Next cannot proceed yet ("" when it can); shown beside the Next button."""
        return ""

    def busy(self) -> str:
        """Work under way that quitting would walk away from ("" when none): Ctrl+Q asks first then."""
        return ""

    def commit(self) -> None:
        """Copy anything not yet written into ``state.answers`` (called before moving on)."""

    def refresh_nav(self) -> None:
        """Enable Next when nothing blocks, and say what does."""
        try:
            nav = self.query_one(NavBar)
        except Exception:
            return  # not composed yet
        reason = self.blocker()
        nav.allow_next(not reason)
        nav.status(reason, error=bool(reason))

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """The "continue anyway" box of a step with blocking findings (Nodes, Paths, Preview): an explicit override
        of the findings that step lists now (``screens.findings.overridden``), never another step's."""
        if event.checkbox.id == "override":
            from screens.findings import override_scope

            if event.value:
                self.state.overrides[self.STEP] = override_scope(self.state, self.STEP)
            else:
                self.state.overrides.pop(self.STEP, None)
            self.refresh_nav()

    def sync_override(self) -> bool:
        """Show this step's override box ticked only while it covers what is listed; True when findings block here."""
        from screens.findings import override_scope, override_ticked

        tick = self.query_one("#override", Checkbox)
        with tick.prevent(Checkbox.Changed):
            tick.value = override_ticked(self.state, self.STEP)
        blocking = bool(override_scope(self.state, self.STEP))
        tick.display = blocking
        return blocking

    def on_nav_bar_pressed(self, event: NavBar.Pressed) -> None:
        event.stop()
        self.go(event.direction)

    def action_back(self) -> None:
        self.go(-1)

    def action_next(self) -> None:
        self.go(1)

    def go(self, direction: int) -> None:
        """Move to the neighbouring step that applies (Next only when nothing blocks).

        Keys pressed in a quick run all reach this screen before the App has switched to the next one
        (a switch takes a turn of the loop or more): each then asked for the same next step, and four
        Ctrl+N moved one step. A key that comes while this screen is being left is kept for the step
        shown next, which replays it (:meth:`_replay_pending_moves`).
        """
        if self._leaving:
            self.wizard.queue_move(direction)
            return
        if direction > 0:
            self.commit()
            reason = self.blocker()
            if reason:
                self.refresh_nav()
                self._refuse(self.blocker_detail() or reason)
                return
            if not self.before_next():
                return
        target = neighbour(self.STEP, direction, self.state)
        if target is None:
            if direction < 0:  # the bell alone is silent in most terminals (tmux, a browser)
                self.app.bell()
                self.notify(f"{step_named(self.STEP).title} is the first step: there is none before it", title="Back")
            else:
                self.post_message(Finish())
            return
        self._leaving = True
        self.post_message(self.Navigate(target.name))

    def _replay_pending_moves(self) -> None:
        """Back/Next keys pressed while the step before was being left: each moves on from here or says why not.

        A refused Next says why as any refused Next does (the toast, once for the same reason, and the
        reason beside the button); once this step is left too, the rest go on to the next one.
        """
        for direction in self.wizard.take_pending_moves():
            if self.app.screen is not self and not self._leaving:
                # a dialog came up (an error, a question): the keys were not meant for it
                self.notify("A dialog opened: answer it first, then move on", title="Keys not used", timeout=4)
                return
            self.go(direction)

    def blocker_detail(self) -> str:
        """The whole story behind :meth:`blocker`, for the toast when Next is refused (default: the same)."""
        return ""

    def _refuse(self, reason: str) -> None:
        """Say why Next is refused: once while the toast is up, not a stack of copies over the button."""
        now = time.monotonic()
        last_reason, last_time = self._last_refusal
        if reason == last_reason and now - last_time < REFUSAL_TOAST_SECONDS:
            return
        self._last_refusal = (reason, now)
        self.notify(reason, title="Not yet", severity="warning", timeout=REFUSAL_TOAST_SECONDS)

    def before_next(self) -> bool:
        """A last check before leaving forward; return False to stay (e.g. after a dialog)."""
        return True

    def maybe_replay(self) -> None:
        """During an answers replay, move on as soon as this step is complete."""
        state = self.state
        if not state.replay:
            return
        if state.replay_until == self.STEP:
            state.replay = False
            self.notify("Answers replayed: review the preview, then apply.", title="Replay")
            return
        self.commit()
        reason = self.blocker()
        if reason:
            state.replay = False
            self.notify(f"Replay stopped at this step: {reason}", title="Replay", severity="warning")
            self.refresh_nav()
            return
        self.call_later(self.go, 1)

    # -- help and errors --------------------------------------------------------------------

    def help_text(self) -> str:
        """This step's help (Markdown): its own ``HELP``, else the shared text for the step."""
        from screens.help_text import step_help

        return self.HELP or step_help(self.STEP, web=self.wizard.web)

    def action_help(self) -> None:
        self.post_message(ShowHelp(step_named(self.STEP).title, self.help_text()))

    def show_error(self, error: BaseException, title: str = "") -> None:
        """Show an error as a dialog saying what to do."""
        from screens.dialogs import ErrorDialog

        heading, message, hint = describe_error(error)
        self.app.push_screen(ErrorDialog(title or heading, message, hint))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Turn a failed worker into an error dialog (workers run with ``exit_on_error=False``)."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.state.replay = False
            self.worker_failed(event.worker, event.worker.error)

    def worker_failed(self, worker: Worker[object], error: BaseException) -> None:
        """A worker of this screen raised; the default shows a dialog."""
        self.show_error(error)
        self.refresh_nav()
