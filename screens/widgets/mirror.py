"""The mirror plan: the skopeo commands to copy, and (when skopeo is installed) a run with progress.

Running uses ``run_mirror`` (through :mod:`wizard.cluster.facade`) in a worker owned by this widget, so leaving the step
cancels the copy. When the run ends, :class:`MirrorPanel.Finished` goes up and the step checks the
registry again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Label, ProgressBar, Static


class MirrorPanel(Vertical):
    """Commands to copy the images into the target registry; a Run button when skopeo is present."""

    DEFAULT_CSS = """
    MirrorPanel {
        height: auto;
        & > #mirror-head { height: 1; margin-top: 1; }
        & > #mirror-head > Label { width: 1fr; text-style: bold; color: $primary; }
        & > #mirror-head > Button { margin-left: 1; min-width: 8; }
        & > #mirror-commands { height: auto; background: $surface; padding: 0 1; }
        & > ProgressBar { display: none; }
        & > #mirror-status { height: auto; color: $text-muted; }
        &.-running > ProgressBar { display: block; }
    }
    """

    class Finished(Message):
        """The mirror run ended; ``outcomes`` are ``MirrorOutcome`` per item."""

        def __init__(self, outcomes: list[Any]) -> None:
            self.outcomes = outcomes
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._items: list[Any] = []
        self._script = ""
        self._can_run = False
        self._skopeo = False
        """Whether this cluster may be mirrored for real (never on the demo: its images are simulated)."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="mirror-head"):
            yield Label("Mirror plan")
            yield Button("Copy", id="mirror-copy", compact=True)
            yield Button("Run mirror", id="mirror-run", compact=True, variant="primary")
        yield Static("", id="mirror-commands")
        yield ProgressBar(total=1, show_eta=False, id="mirror-progress")
        yield Static("", id="mirror-status")

    def on_mount(self) -> None:
        from wizard.cluster.facade import skopeo_available

        self._skopeo = skopeo_available()
        self.query_one("#mirror-run", Button).display = False

    def show(
        self,
        items: Sequence[Any],
        script: str,
        *,
        can_run: bool = True,
        note: str = "",
        empty: str = "nothing to mirror: the cluster pulls from the source",
    ) -> None:
        """The items to copy (``MirrorItem``), the script text for Copy, and whether Run is offered.

        With ``can_run`` False (the demo cluster) there is no Run button at all and ``note`` says why;
        a click must never copy real images for a simulated cluster.
        """
        from wizard.engine.mirror import shell_command

        # what no source holds is never offered as a copy: it is named, with the way forward
        unheld = [item for item in items if getattr(item, "unheld", "")]
        self._items = [item for item in items if not getattr(item, "unheld", "")]
        self._script, self._can_run = script, can_run
        lines = []
        for item in self._items:
            for argv in item.commands:
                if argv[0] == "skopeo" and argv[1] == "copy":
                    lines.append(f"[$accent]$[/] {escape(shell_command(argv))}")
        commands = self.query_one("#mirror-commands", Static)
        missing = [
            f"[$error]✗ not copied:[/] {escape(item.target)}: {escape(item.unheld)}"
            + (f" — gpu-wizard check-kernel {escape(item.kernel)}" if item.kernel else "")
            for item in unheld
        ]
        commands.update("\n".join([*lines, *missing]) or f"[$text-muted]{escape(empty)}[/]")
        self.query_one("#mirror-copy", Button).display = bool(lines)
        self.query_one("#mirror-run", Button).display = self._runnable() and not self.has_class("-running")
        status = self.query_one("#mirror-status", Static)
        if note and self._items:
            status.update(escape(note))
        elif not self._skopeo and self._items:
            status.update("skopeo is not installed here: copy the commands and run them")

    def _runnable(self) -> bool:
        return bool(self._items) and self._skopeo and self._can_run

    @on(Button.Pressed, "#mirror-copy")
    def _copy(self) -> None:
        from screens.clipboard import copy_text

        self.notify(copy_text(self.app, self._script, "The mirror script"), title="Mirror")

    @on(Button.Pressed, "#mirror-run")
    def _run_pressed(self) -> None:
        if self._runnable():
            self.run_mirror()

    @work(exclusive=True, group="mirror", exit_on_error=False)
    async def run_mirror(self) -> None:
        """Copy every image with skopeo, showing progress; errors stay per item."""
        from wizard.cluster.facade import MirrorProgress, run_mirror

        if not self._runnable():
            return

        bar = self.query_one(ProgressBar)
        status = self.query_one("#mirror-status", Static)
        bar.update(total=len(self._items), progress=0)
        self.add_class("-running")
        self.query_one("#mirror-run", Button).display = False

        def progress(event: MirrorProgress) -> None:
            if event.event in ("done", "failed"):
                bar.advance(1)
            word = {"started": "copying", "copying": "copying", "done": "✓ copied", "failed": "✗ failed"}[event.event]
            detail = f": {event.message}" if event.event == "failed" and event.message else ""
            status.update(f"{event.index + 1}/{event.total} {word} {event.target}{detail}")

        try:
            outcomes = await run_mirror(self._items, on_progress=progress)
        finally:
            self.remove_class("-running")
            self.query_one("#mirror-run", Button).display = self._runnable()
        failed = [o for o in outcomes if not o.ok]
        status.update(
            f"✗ {len(failed)} of {len(outcomes)} copies failed: {failed[0].error}"
            if failed
            else f"✓ {len(outcomes)} image(s) copied"
        )
        self.post_message(self.Finished(outcomes))
