"""Package discovery only (metadata lives in pyproject.toml).

The top-level ``assets/`` folder ships as the package ``wizard.assets`` so that a wheel install
finds styles, scenarios, examples and the operator's CRDs without the repository. Each asset folder
whose name Python could import (``doctor``, ``scenarios/nodelists``…) is declared a package of its own,
as setuptools asks (it would otherwise drop them from wheels in a future release); a folder it could not
(``operator/v26.3.3``) ships as data of the nearest declared one.
"""

from pathlib import Path

from setuptools import find_packages, setup

ASSET_DIR = Path(__file__).parent / "assets"
ROOT = "wizard.assets"


def _package(folder: Path) -> str | None:
    """The package name of an asset folder, None when Python could not import it by name."""
    parts = folder.relative_to(ASSET_DIR).parts
    return ".".join((ROOT, *parts)) if all(p.isidentifier() for p in parts) else None


asset_data: dict[str, list[str]] = {}
for path in sorted(ASSET_DIR.rglob("*")):
    if not path.is_file() or "__pycache__" in path.parts:
        continue
    owner = path.parent
    while _package(owner) is None:  # the nearest folder that is a package holds it
        owner = owner.parent
    asset_data.setdefault(str(_package(owner)), []).append(str(path.relative_to(owner)))

setup(
    packages=[*find_packages(include=["wizard", "wizard.*", "screens", "screens.*"]), *sorted(asset_data)],
    package_dir={ROOT: "assets"},
    package_data=asset_data,
)
