"""A non-editable install (wheel) carries the engine, the UI and every asset it needs at run time."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wheel import shared_wheel

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel = shared_wheel(tmp_path_factory)
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    return target


def _run(site: Path, code: str, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_wheel_finds_assets_without_the_repository(installed_wheel: Path, tmp_path: Path) -> None:
    out = _run(
        installed_wheel,
        "import wizard, wizard.bundled as r;"
        "print(wizard.__file__);"
        "print(r.asset_names('examples'));"
        "print(sorted(r.operator_values('v26.7.0'))[:3]);"
        "print(r.operator_crd('v25.10.1', 'nvidiadrivers')['kind'])",
        tmp_path,
    )
    lines = out.splitlines()
    assert lines[0].startswith(str(installed_wheel)), "imported the checkout instead of the wheel"
    assert "sle-micro-precompiled.answers.yaml" in lines[1]
    assert lines[3] == "CustomResourceDefinition"


def test_wheel_ships_every_package(installed_wheel: Path) -> None:
    shipped = {p.relative_to(installed_wheel).as_posix() for p in installed_wheel.rglob("*.py")}
    expected = {
        p.relative_to(ROOT).as_posix()
        for folder in ("wizard", "screens")
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert expected <= shipped
    assets = {p.relative_to(ROOT / "assets").as_posix() for p in (ROOT / "assets").rglob("*") if p.is_file()}
    assets = {a for a in assets if "__pycache__" not in a}
    shipped_assets = {
        p.relative_to(installed_wheel / "wizard" / "assets").as_posix()
        for p in (installed_wheel / "wizard" / "assets").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert assets <= shipped_assets
