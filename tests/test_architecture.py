"""The rooms keep their rules: every import-linter contract in pyproject.toml holds (docs/architecture.md).

The contracts say which way imports go (launcher > CLI | TUI > cluster > registry > demo > retry >
engine > data), that the engine is pure, that only the gateway imports ``kubernetes``, that the TUI
reaches the cluster through the facade only, that the demo imports no engine rule, and that no two
sibling modules import each other.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"  # import-linter, a test extra
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and " KEPT" in done.stdout


def test_the_demo_borrows_no_engine_code() -> None:
    """No contract lists an exception: the demo's own contract none, and no other contract either."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "ignore_imports" not in text


def _contract(name: str) -> dict[str, list[str]]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"].startswith(name))


def _modules(package: str) -> set[str]:
    folder = ROOT / package.replace(".", "/")
    return {f"{package}.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"}


def test_the_contracts_name_every_module_of_the_cluster_room() -> None:
    """The contracts list modules (no exceptions allowed): a module added later must be listed too, or the
    linter would not look at it (review found seven missing, the exec's websocket client among them)."""
    kube = set(_contract("Only the gateway imports kubernetes")["source_modules"])
    cluster = _modules("wizard.cluster") | _modules("wizard.cluster.gateway") - {"wizard.cluster.gateway.kube"}
    assert not cluster - kube, f"add to the kubernetes contract: {sorted(cluster - kube)}"
    tui = set(_contract("The TUI reaches the cluster")["forbidden_modules"])
    reachable = {"wizard.cluster.facade", "wizard.cluster.errors"}
    internals = _modules("wizard.cluster") - reachable - {"wizard.cluster.gateway"}
    missing = {m for m in internals if m not in tui}
    assert not missing, f"add to the TUI's contract: {sorted(missing)}"
