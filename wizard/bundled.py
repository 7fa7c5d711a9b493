"""Locating the bundled assets (package data ``wizard.assets``) in any kind of install, and reading them.

The operator's CRDs and chart values, the advice's wording and the catalog are read-only data read on every
render (the operator's on every TUI start too). Their YAML is parsed once at build time (``make data``, i.e. ``python -m wizard.bundled``) into a
JSON file beside each YAML file, and read at run time with ``json.loads`` (about 50× faster than
ruamel's pure-Python parser). ``tests/test_bundled_data.py`` checks that the JSON is up to date.

``GPU_WIZARD_ASSETS`` (a folder laid out like ``assets/``) replaces the bundled assets: a release folder
added there is known to the engine, the demo and the TUI alike (``tests/test_release_data.py``). Data read
is cached per root, so the variable may change between reads.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

DEFAULT_DEMO_SCENARIO = "sle-micro-precompiled"
"""The bundled scenario (``assets/scenarios``) a ``--demo`` without a name starts: the wizard, ``serve``,
every cluster command and the Connect step's demo choice."""

ASSETS_ENV = "GPU_WIZARD_ASSETS"
"""Environment variable naming a folder that replaces the bundled assets (tests, a release tried before it ships)."""
OPERATOR_RELEASE_FILE = "release.yaml"
"""The file in ``assets/operator/<release>/`` saying what differs between releases (read through the engine's
``wizard.engine.releases`` and the demo's ``wizard.demo.rules.release_data``)."""

GENERATED_FOLDERS = ("operator", "advice")
"""Asset folders whose ``*.yaml`` files have a generated ``*.json`` twin."""
GENERATED_FILES = ("catalog.yaml",)
"""Single asset files (at the root of ``assets/``) with a generated ``*.json`` twin."""


def assets() -> Traversable:
    """The root of the bundled assets: ``$GPU_WIZARD_ASSETS``, the installed package data, or the checkout's ``assets/``.

    A package on disk is read as plain files: ``importlib.resources`` (and the ``zipfile`` it loads)
    is needed only for a zipped install, and the TUI reads its stylesheet before the first frame.
    """
    override = os.environ.get(ASSETS_ENV)
    if override:
        return Path(override)
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
    """Text of one bundled asset, e.g. ``asset_text("operator", release, "gpu-operator-values.yaml")``."""
    node = assets()
    for part in parts:
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def asset_names(folder: str) -> list[str]:
    """File names inside one asset folder, sorted."""
    return sorted(p.name for p in assets().joinpath(folder).iterdir() if p.is_file())


def parse_yaml(text: str) -> Any:
    """A YAML document as plain data (the slow path: build time, tests, and a JSON twin gone missing)."""
    from ruamel.yaml import YAML  # imported on first use: the UI's first frame does not need it

    return YAML(typ="safe", pure=True).load(text)


def json_twin(data: Any) -> str:
    """The generated JSON text of one YAML asset's data: compact, key order kept (the chart's order is rendered)."""
    import json  # on first use, as in asset_data: the TUI's first frame reads only the stylesheet

    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def asset_data(*parts: str) -> Any:
    """A YAML asset's plain data, from its generated JSON twin when there is one (cached per assets root; do not
    mutate), e.g. ``asset_data("advice", "advice.yaml")``: ruamel's pure-Python parse of a small file costs a
    render a few CPU-ms, ``json.loads`` a few hundredths of one."""
    return _load_data_at(str(assets()), *parts)


@cache
def _load_data_at(root: str, *parts: str) -> Any:
    import json  # on first use: the TUI's first frame reads only the stylesheet (json is not loaded by Textual)

    del root  # the cache key: asset_text reads from the same root
    *folder, name = parts
    try:
        return json.loads(asset_text(*folder, name.removesuffix(".yaml") + ".json"))
    except FileNotFoundError:
        return parse_yaml(asset_text(*parts))


def operator_bundles() -> list[str]:
    """The folders of ``assets/operator/`` that hold a release (a ``release.yaml``), unordered names."""
    folder = assets().joinpath("operator")
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and p.joinpath(OPERATOR_RELEASE_FILE).is_file())


def operator_release_data(bundle: str) -> Any:
    """The plain data of one release folder's ``release.yaml``, unchecked: its readers validate it."""
    return asset_data("operator", bundle, OPERATOR_RELEASE_FILE)


def operator_values(bundle: str) -> dict[str, Any]:
    """The chart's ``values.yaml`` of an operator release bundle (a folder of ``assets/operator/``); do not mutate."""
    data: dict[str, Any] = asset_data("operator", bundle, "gpu-operator-values.yaml")
    return data


def operator_crd(bundle: str, plural: str) -> dict[str, Any]:
    """The real CRD (``clusterpolicies`` or ``nvidiadrivers``) of a release bundle; do not mutate."""
    data: dict[str, Any] = asset_data("operator", bundle, f"nvidia.com_{plural}.yaml")
    return data


def generated_files(root: Path) -> dict[Path, str]:
    """Every generated JSON file under an ``assets/`` folder and the text it should have."""
    sources = [source for folder in GENERATED_FOLDERS for source in sorted((root / folder).rglob("*.yaml"))]
    sources += [root / name for name in GENERATED_FILES if (root / name).is_file()]
    return {
        source.with_suffix(".json"): json_twin(parse_yaml(source.read_text(encoding="utf-8"))) for source in sources
    }


def main(argv: list[str]) -> int:
    """``python -m wizard.bundled [ASSETS]``: write the JSON twins of the checkout's YAML assets."""
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / "assets"
    for path, text in generated_files(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
