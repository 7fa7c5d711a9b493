"""Package discovery only (metadata lives in pyproject.toml).

The top-level ``assets/`` folder ships as the package ``wizard.assets`` so that a wheel install
finds styles, scenarios, examples and the operator's CRDs without the repository.
"""

from pathlib import Path

from setuptools import find_packages, setup

ASSET_DIR = Path(__file__).parent / "assets"
asset_files = [
    str(p.relative_to(ASSET_DIR)) for p in ASSET_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts
]

setup(
    packages=[*find_packages(include=["wizard", "wizard.*", "screens", "screens.*"]), "wizard.assets"],
    package_dir={"wizard.assets": "assets"},
    package_data={"wizard.assets": asset_files},
)
