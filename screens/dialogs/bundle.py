"""Preview's "Bundle…" dialog: which deployer (Helm, helmfile, Argo CD, Flux) and the folder to write it to
(the path asked and checked by :class:`~screens.dialogs.dialogs.PathPrompt`, as every path is)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.widgets import Select

from screens.dialogs.dialogs import _DIALOG_CSS, PathPrompt

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
    return ""


class BundleDialog(PathPrompt[tuple[str, str]]):
    """Ask for a deployer and a new folder; returns (deployer, absolute folder), or None when cancelled."""

    DEFAULT_CSS = (
        _DIALOG_CSS.format(name="BundleDialog", border="$primary")
        + """
    BundleDialog #bundle-error { color: $error; height: auto; }
    BundleDialog #deployer { width: 1fr; }
    """
    )
    INPUT_ID = "folder"
    ERROR_ID = "bundle-error"

    def __init__(self, default_folder: str) -> None:
        super().__init__("Save a GitOps bundle of this plan", default_folder)

    def compose_choices(self) -> ComposeResult:
        yield Select(
            [(title, name) for name, title in DEPLOYER_TITLES.items()],
            value="helm",
            allow_blank=False,
            id="deployer",
            compact=True,
        )

    def path_problem(self, text: str, target: Path) -> str:
        return folder_problem(text)

    def result(self, target: Path) -> tuple[str, str]:
        return str(self.query_one("#deployer", Select).value), str(target.absolute())
