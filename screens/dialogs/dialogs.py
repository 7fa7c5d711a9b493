"""The wizard's modal dialogs, each a typed ``ModalScreen`` with its own CSS.

* :class:`ErrorDialog` (``None``): what went wrong and what to do about it; never a traceback.
* :class:`ConfirmDialog` (``bool``): a yes/no question with the facts needed to answer it.
* :class:`HelpDialog` (``None``): the F1 help of a step (Markdown, drawn by Rich in one ``Static``).
* :class:`PathDialog` (``str | None``): a file name to save to, prefilled and validated.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from screens import keys
from screens.widgets.field import MAX_FIELD_CHARS
from wizard.engine.textsafe import printable

if TYPE_CHECKING:
    from rich.markdown import Markdown as RichMarkdown

ResultT = TypeVar("ResultT")

_DIALOG_CSS = """
{name} {{
    align: center middle;
    background: $background 60%;
    & > Vertical {{
        width: 72; max-width: 96%; height: auto; max-height: 90%;
        border: thick {border}; background: $panel; padding: 0 1;
    }}
    & .dialog-title {{ text-style: bold; color: {border}; width: 1fr; }}
    & .dialog-body {{ height: auto; max-height: 16; }}
    & .dialog-hint {{ color: $text; margin-top: 1; }}
    & .dialog-buttons {{ height: 1; margin-top: 1; align-horizontal: right; }}
    & .dialog-buttons > Button {{ margin-left: 2; min-width: 8; }}
}}
"""


class ErrorDialog(ModalScreen[None]):
    """An error worded for the user: the problem, then what to do."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="ErrorDialog", border="$error")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "dismiss_dialog", "Close")]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        self._title = title
        self._message = message
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"✗ {self._title}", classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body"):
                yield Static(self._message, markup=False)
                if self._hint:
                    yield Static(f"What to do: {self._hint}", classes="dialog-hint", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("OK", id="ok", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#ok", Button).focus()

    def action_dismiss_dialog(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss(None)


class ConfirmDialog(ModalScreen[bool]):
    """A yes/no question; the body carries the facts needed to answer it (Markdown)."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="ConfirmDialog", border="$warning")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "answer(False)", "Cancel")]

    def __init__(self, title: str, body: str, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__()
        self._title = title
        self._body = body
        self._yes = yes
        self._no = no

    @property
    def body(self) -> str:
        """The question's Markdown text."""
        return self._body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body"):
                from textual.widgets import Markdown  # markdown-it loads only when a dialog opens

                yield Markdown(self._body)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self._no, id="no", compact=True)
                yield Button(self._yes, id="yes", variant="warning", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


@lru_cache(maxsize=64)
def help_markdown(text: str) -> RichMarkdown:
    """The parsed help text; cached, so each step's help is parsed once (see :func:`prebuild_help`)."""
    from rich.markdown import Markdown  # markdown-it loads only when help is first needed

    return Markdown(text)


def prebuild_help(texts: Iterable[str]) -> None:
    """Parse help texts ahead of F1 (call it in a thread after the first frame): imports and parsing done."""
    for text in texts:
        help_markdown(text)


class HelpDialog(ModalScreen[None]):
    """F1: what this step is for, what each choice means, the keys."""

    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="HelpDialog", border="$primary")
        + """
    HelpDialog > Vertical { height: 90%; }
    HelpDialog .dialog-body { height: 1fr; max-height: 100%; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,f2,q", "close", "Close"),
        Binding(f"{keys.NEXT.terminal},{keys.NEXT.browser}", "next_step", "Next", show=False),
    ]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self._title = title
        self._text = text

    @property
    def text(self) -> str:
        """The help's Markdown source (the dialog shows it laid out)."""
        return self._text

    def show(self, title: str, text: str) -> None:
        """Show another help in this dialog (it is kept between F1s): title and text swapped, scrolled to the top."""
        if (title, text) == (self._title, self._text):
            return
        self._title, self._text = title, text
        self.query_one(".dialog-title", Label).update(f"Help — {title}")
        self.query_one("#help-text", Static).update(help_markdown(printable(text, keep="\n")))
        self.query_one("#help-body").scroll_home(animate=False)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Help — {self._title}", classes="dialog-title", markup=False)
            with VerticalScroll(classes="dialog-body", id="help-body"):
                # One Static holding Rich's Markdown, not Textual's Markdown widget: that one mounts a
                # widget per block and held the loop for most of a second per F1; this one lays out at once.
                # printable: the text may quote node names and raw pod output, and Rich's Markdown keeps ESC
                yield Static(help_markdown(printable(self._text, keep="\n")), id="help-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", id="close", compact=True, variant="primary")

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_close(self) -> None:
        self.dismiss(None)

    async def action_next_step(self) -> None:
        """Next pressed over the help (or arriving with the Esc that closes it): close the help and let the
        step below move on, or say why it cannot; the key is not lost on a dialog that has no use for it."""
        stack = self.app.screen_stack
        below = stack[-2] if len(stack) > 1 and stack[-1] is self else None
        self.dismiss(None)
        if below is not None:
            await below.run_action("next")

    @on(Button.Pressed, "#close")
    def _close(self) -> None:
        self.dismiss(None)


SESSION_FOLDER_VARIABLE = "GPU_WIZARD_SESSION_FOLDER"
"""Set by ``gpu-wizard serve`` for its session processes: every file a student saves stays inside it."""


def inside_session_folder(target: Path) -> bool:
    """True outside classroom mode; in it, whether ``target`` (symlinks resolved) lies in the session's folder."""
    boundary = os.environ.get(SESSION_FOLDER_VARIABLE)
    if not boundary:
        return True
    return target.resolve().is_relative_to(Path(boundary).resolve())


class PathPrompt(ModalScreen[ResultT]):
    """Ask for a path to write to, prefilled and checked on Save: the one path-asking dialog (a file:
    :class:`PathDialog`; a folder and its deployer: ``screens.dialogs.bundle.BundleDialog``)."""

    INPUT_ID: ClassVar[str] = "path"
    """The path's Input (tests and CSS name it)."""
    ERROR_ID: ClassVar[str] = "path-error"
    """Where the reason a path is refused is shown."""
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, default: str) -> None:
        super().__init__()
        self._title = title
        self._default = default

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, classes="dialog-title", markup=False)
            yield from self.compose_choices()
            yield Input(self._default, id=self.INPUT_ID, compact=True, max_length=MAX_FIELD_CHARS)
            yield Static("", id=self.ERROR_ID, markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Save", id="save", variant="primary", compact=True)

    def compose_choices(self) -> ComposeResult:
        """Widgets above the path (none by default)."""
        yield from ()

    def path_problem(self, text: str, target: Path) -> str:
        """Why ``target`` (typed as ``text``) cannot be written ("" when it can); the session folder is checked after."""
        raise NotImplementedError

    def result(self, target: Path) -> ResultT:
        """What the dialog returns for an accepted path."""
        raise NotImplementedError

    def on_mount(self) -> None:
        self.query_one(f"#{self.INPUT_ID}", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#save")
    @on(Input.Submitted)
    def _save(self) -> None:
        text = self.query_one(f"#{self.INPUT_ID}", Input).value.strip()
        target = Path(text).expanduser()
        problem = self.path_problem(text, target)
        if not problem and not inside_session_folder(target):
            problem = "a classroom session keeps its files in its own folder: give a path under ~"
        if problem:
            self.query_one(f"#{self.ERROR_ID}", Static).update(problem)
            return
        self.dismiss(self.result(target))


class PathDialog(PathPrompt[str]):
    """Ask for a file to write; returns the absolute path, or None when cancelled."""

    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="PathDialog", border="$primary")
        + """
    PathDialog #path-error { color: $error; height: auto; }
    """
    )

    def path_problem(self, text: str, target: Path) -> str:
        if not text:
            return "give a file name"
        if target.is_dir():
            return f"{text} is a folder; give a file name inside it"
        if target.parent.exists() and not target.parent.is_dir():
            return f"{target.parent} is not a folder"
        return ""

    def result(self, target: Path) -> str:
        return str(target.absolute())
