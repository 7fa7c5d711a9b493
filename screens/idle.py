"""Work the app keeps out of the user's way: held back until the first frame, done in a thread, or done while idle.

:class:`IdleWork` belongs to the :class:`~screens.app.WizardApp`. It holds callbacks until the first frame
is on the terminal (reading files and importing the engine hold the GIL and would delay it), then warms
up in a thread what later steps would otherwise build on the event loop (F1's help, the step modules,
the driver catalog), and tells the memory policy its entry point handed the app (:class:`MemoryPolicy`) when the
first frame is up, when the user gives input and, every few seconds, that it may look whether the user is idle:
what the policy does then is its own business (``wizard.launch`` hands the TUI the engine's one policy).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from textual import events
from textual.app import App

#: Modules a later step imports on the event loop, imported in the warm-up thread instead.
WARM_MODULES = (
    "jsonschema",  # Preview's dry run: its import held the loop
    "screens.steps.nodes",
    "screens.steps.mode",
    "screens.steps.driver",
    "screens.steps.paths",
    "screens.steps.preview",
    "screens.steps.apply",
    "screens.steps.verify",
)
#: Input that counts as the user being busy (mouse-wheel scrolling included).
INPUT_EVENTS = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)


class MemoryPolicy(Protocol):
    """What the app tells the memory policy its entry point hands it (``WizardApp(memory=...)``)."""

    CHECK_S: float
    """How often :meth:`check` is called."""

    def started(self) -> None:
        """The first frame is up."""

    def user_input(self) -> None:
        """The user pressed a key, clicked or scrolled."""

    def check(self) -> object:
        """Every :attr:`CHECK_S`: the policy may act if the user is idle."""

    def ended(self) -> None:
        """The app closes."""


class IdleWork:
    """The first-frame hold-back, the warm-up thread and the memory policy's signals of one app."""

    def __init__(self, app: App[Any], *, web: bool, memory: MemoryPolicy | None = None) -> None:
        self._app = app
        self._web = web
        self._memory = memory
        self._first_frame_shown = False
        self._waiting: list[Callable[[], object]] = []

    def after_first_frame(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` once the first frame has been displayed (at once, later on).

        Reading files and importing the engine (which holds the GIL for a second) compete with the first
        frame; a fixed grace period let them start before it on a loaded machine, where the first frame
        takes longer than the grace.
        """
        if self._first_frame_shown:
            self._app.call_later(callback)
        else:
            self._waiting.append(callback)

    def first_frame_shown(self) -> None:
        """Called on Textual's Ready (the DOM built, the first frame displayed): start everything held back."""
        if self._memory is not None:
            self._memory.started()
            self._app.set_interval(self._memory.CHECK_S, self._memory.check)
        self._first_frame_shown = True
        waiting, self._waiting = self._waiting, []
        for callback in [self._warm_up, *waiting]:
            self._app.call_later(callback)

    def note_event(self, event: events.Event) -> None:
        """Every event the app receives passes here: the memory policy hears of input."""
        if self._memory is not None and isinstance(event, INPUT_EVENTS):
            self._memory.user_input()

    def ended(self) -> None:
        """The app closes: the memory policy hears of it."""
        if self._memory is not None:
            self._memory.ended()

    def _warm_up(self) -> None:
        """Parse every step's F1 help in a thread (F1 then only lays out text that is ready), and warm the rest."""
        from screens.help_text import HELP, step_help

        texts = [step_help(step, web=self._web) for step in HELP]
        self._app.run_worker(lambda: warm_up(texts), thread=True, group="prebuild-help", exit_on_error=False)


def warm_up(help_texts: list[str]) -> None:
    """In a thread after the first frame: F1's help parsed, modules a later step imports, the driver catalog.

    A thread holds the GIL only for a switch interval (5 ms) at a time, so the loop keeps answering;
    the same work on the loop held it for its whole length, inside the step's first frame (the Driver
    step's module and the catalog it parses).
    """
    import importlib

    from screens.dialogs.dialogs import prebuild_help
    from wizard.engine.catalog import catalog_entries

    prebuild_help(help_texts)
    for module in WARM_MODULES:
        with contextlib.suppress(ImportError):  # the step that needs it says what is missing
            importlib.import_module(module)
    with contextlib.suppress(ValueError):  # a broken catalog: the Driver step says so
        catalog_entries()
