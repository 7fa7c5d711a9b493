"""The frame around every step: title bar with the cluster and demo badge, step strip, Back/Next.

These widgets only display what the App's state says; they post :class:`NavBar.Pressed` up when a
navigation button is clicked and never decide where to go themselves.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from screens.flow import STEPS
from screens.keys import footer_hints

BADGE_STYLE = "bold $background on $warning"
"""The demo badge: what says the cluster is simulated, kept on the smallest screen."""


class TopBar(Widget):
    """One line: product and step title left; cluster context and, for the demo, a badge right."""

    DEFAULT_CSS = """
    TopBar {
        height: 1;
        background: $panel;
        color: $foreground;
    }
    """

    def __init__(self, title: str, cluster: str, demo: bool) -> None:
        super().__init__()
        self._title = title
        self._cluster = cluster
        self._demo = demo

    def render(self) -> Content:
        left = Content.assemble((" gpu-wizard ", "bold $accent"), (self._title, "bold"))
        room = self.size.width - left.cell_length - 1
        cluster = Content.assemble((self._cluster + " ", "$text-muted"))
        badge = Content.assemble((" DEMO — simulated cluster ", BADGE_STYLE)) if self._demo else Content("")
        if self._demo and cluster.cell_length + badge.cell_length > room:  # narrow (a phone): the badge stays
            if badge.cell_length > room:
                badge = Content.assemble((" DEMO ", BADGE_STYLE))
            cluster = cluster.truncate(max(0, room - badge.cell_length), ellipsis=True)
        right = Content.assemble(cluster, badge)
        if right.cell_length > room:
            right = right.truncate(max(0, room), ellipsis=True)
        gap = max(1, self.size.width - left.cell_length - right.cell_length)
        return Content.assemble(left, " " * gap, right)

    def show_cluster(self, cluster: str, demo: bool) -> None:
        """Update the cluster label and the badge after a (re)connect."""
        self._cluster, self._demo = cluster, demo
        self.refresh()


class StepStrip(Widget):
    """``1 Connect 2 Nodes …`` with the current step highlighted and skipped steps dimmed.

    Every step stays in the strip at any width: the labels shorten to four letters, then to the
    numbers alone beside the current step's name (at 60 columns the full strip lost Apply and Verify).
    """

    DEFAULT_CSS = """
    StepStrip {
        height: 1;
        padding: 0 1;
        color: $text-muted;
        background: $surface;
    }
    """

    #: Label lengths tried in turn (None: the whole title's first word; 0: the number alone).
    LABEL_LENGTHS: tuple[int | None, ...] = (None, 4, 0)

    def __init__(self, current: str, skipped: frozenset[str]) -> None:
        super().__init__()
        self._current = current
        self._skipped = skipped

    def render(self) -> Content:
        room = self.size.width  # the content area (inside the padding)
        for length in self.LABEL_LENGTHS:
            strip = self.strip(length)
            if strip.cell_length <= room:
                return strip
        return strip

    def strip(self, length: int | None) -> Content:
        """The strip with labels cut to ``length`` letters (the current step always named in full)."""
        parts: list[Content] = []
        for number, step in enumerate(STEPS, start=1):
            label = step.title.split(" ")[0]
            if step.name == self._current:
                parts.append(Content.styled(f" {number} {label} ", "bold $accent reverse"))
                continue
            short = label if length is None else label[:length]
            text = f"{number} {short}".rstrip()
            parts.append(Content.styled(text, "dim strike") if step.name in self._skipped else Content(text))
        return Content(" ").join(parts)


class NavBar(Horizontal):
    """Back and Next buttons with a one-line status between them."""

    DEFAULT_CSS = """
    NavBar {
        height: 1;
        background: $surface;
        & > Button { min-width: 10; margin: 0 1; }
        & > #back.-none { visibility: hidden; }
        & > #nav-status { width: 1fr; color: $text-muted; content-align: center middle; }
        & > #nav-status.-error { color: $error; }
    }
    """

    class Pressed(Message):
        """Back (-1) or Next (+1) was pressed."""

        def __init__(self, direction: int) -> None:
            self.direction = direction
            super().__init__()

    def __init__(self, back: bool, next_label: str) -> None:
        super().__init__()
        self._back = back
        self._next_label = next_label
        self._status = ("", False)
        """The status shown (the label starts empty)."""

    def compose(self) -> ComposeResult:
        # no step before: no Back to look pressable (Esc says why it does nothing, see StepScreen.go)
        yield Button("◀ Back", id="back", compact=True, disabled=not self._back, classes="" if self._back else "-none")
        yield Static("", id="nav-status", markup=False)
        yield Button(self._next_label, id="next", compact=True, variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.Pressed(-1 if event.button.id == "back" else 1))

    def status(self, text: str, *, error: bool = False) -> None:
        """Show a short status (what is missing before Next works, or what is running).

        The same text again changes nothing: steps say it after every keystroke, and an update lays
        the whole screen out again.
        """
        if (text, error) == self._status:
            return
        self._status = (text, error)
        label = self.query_one("#nav-status", Static)
        label.update(text)
        label.set_class(error, "-error")

    def allow_next(self, allowed: bool, label: str | None = None) -> None:
        """Enable or disable Next (and rename it, e.g. to "Apply…")."""
        button = self.query_one("#next", Button)
        button.disabled = not allowed
        if label is not None:
            button.label = label


class KeyHints(Static):
    """The keys that work on every step, in one line (lighter than a Footer: the set never changes)."""

    DEFAULT_CSS = """
    KeyHints {
        height: 1;
        background: $panel;
        color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, *, web: bool = False) -> None:
        """``web``: show the keys a browser lets through (``gpu-wizard serve``), see :mod:`screens.keys`."""
        hints = footer_hints(web=web)
        super().__init__("  ".join(f"[b $accent]{key}[/] {label}" for key, label in hints))
