"""Preview's "Bundle…" dialog: which deployer (Helm, helmfile, Argo CD, Flux) and the folder to write it to."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from screens.dialogs.dialogs import _DIALOG_CSS, inside_session_folder

#: deployer -> its name in the list.
DEPLOYER_TITLES = {"helm": "Helm (values + deploy script)", "helmfile": "helmfile", "argocd": "Argo CD Application",
                   "flux": "Flux HelmRelease"}  # fmt: skip


def folder_problem(text: str) -> str:
    """Why ``text`` is no folder to write a bundle into ("" when it is: new or empty, its parent a folder)."""
    target = Path(text).expanduser()
    if not text:
        return "give a folder name"
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        return f"{text} exists and is not an empty folder; give a new folder"
    if not target.parent.is_dir():
        return f"{target.parent} is not a folder"
    if not inside_session_folder(target):
        return "a classroom session keeps its files in its own folder: give a path under ~"
    return ""


class BundleDialog(ModalScreen[tuple[str, str] | None]):
    """Ask for a deployer and a new folder; returns (deployer, absolute folder), or None when cancelled."""

    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="BundleDialog", border="$primary")
        + """
    BundleDialog #bundle-error { color: $error; height: auto; }
    BundleDialog #deployer { width: 1fr; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default_folder: str) -> None:
        super().__init__()
        self._default = default_folder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Save a GitOps bundle of this plan", classes="dialog-title", markup=False)
            yield Select(
                [(title, name) for name, title in DEPLOYER_TITLES.items()],
                value="helm",
                allow_blank=False,
                id="deployer",
                compact=True,
            )
            yield Input(self._default, id="folder", compact=True)
            yield Static("", id="bundle-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Save", id="save", variant="primary", compact=True)

    def on_mount(self) -> None:
        self.query_one("#folder", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#save")
    @on(Input.Submitted, "#folder")
    def _save(self) -> None:
        text = self.query_one("#folder", Input).value.strip()
        problem = folder_problem(text)
        if problem:
            self.query_one("#bundle-error", Static).update(problem)
            return
        deployer = str(self.query_one("#deployer", Select).value)
        self.dismiss((deployer, str(Path(text).expanduser().absolute())))
