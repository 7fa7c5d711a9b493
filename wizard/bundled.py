"""The bundled assets (package data ``wizard.assets``: CRDs, chart values, scenarios, styles), found in any kind of install; every room reads them through here."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable


def assets() -> Traversable:
    """The root of the bundled assets: the installed package data, or the checkout's ``assets/``.

    A package on disk is read as plain files: ``importlib.resources`` (and the ``zipfile`` it loads)
    is needed only for a zipped install, and the TUI reads its stylesheet before the first frame.
    """
    try:
        import wizard.assets as package
    except ModuleNotFoundError:  # running from a checkout that was never installed
        return Path(__file__).resolve().parent.parent / "assets"
    folder = Path(package.__file__ or "").parent
    if package.__file__ and folder.is_dir():
        return folder
    from importlib import resources

    return resources.files("wizard.assets")


def asset_text(*parts: str) -> str:
    """Text of one bundled asset, e.g. ``asset_text("operator", "v26.7.0", "gpu-operator-values.yaml")``."""
    node = assets()
    for part in parts:
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def asset_names(folder: str) -> list[str]:
    """File names inside one asset folder, sorted."""
    return sorted(p.name for p in assets().joinpath(folder).iterdir() if p.is_file())


@cache
def _load_yaml(*parts: str) -> Any:
    from ruamel.yaml import YAML  # imported on first use: the UI's first frame does not need it

    return YAML(typ="safe", pure=True).load(asset_text(*parts))


def operator_values(bundle: str) -> dict[str, Any]:
    """The chart's ``values.yaml`` of an operator release bundle (e.g. ``v26.7.0``); do not mutate."""
    data: dict[str, Any] = _load_yaml("operator", bundle, "gpu-operator-values.yaml")
    return data


def operator_crd(bundle: str, plural: str) -> dict[str, Any]:
    """The real CRD (``clusterpolicies`` or ``nvidiadrivers``) of a release bundle; do not mutate."""
    data: dict[str, Any] = _load_yaml("operator", bundle, f"nvidia.com_{plural}.yaml")
    return data
