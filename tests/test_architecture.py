"""The rooms keep their rules: every import-linter contract in pyproject.toml holds (docs/architecture.md).

The contracts say which way imports go (launcher > CLI | TUI > cluster > registry > demo > retry >
engine > data), that the engine is pure, that only the gateway imports ``kubernetes``, that the TUI
reaches the cluster through the facade only, that the cluster room is layered by flow (facade >
verification > the flows, peers > probes > core > gateway > access > errors), that the demo imports no engine
rule, and that no two sibling modules import each other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_contract_is_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"  # import-linter, a test extra
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout and " KEPT" in done.stdout


DOORS = ("wizard.cluster.gateway.kube", "wizard.cluster.facade")
"""The two modules a contract may name: kubernetes' one importer, and the cluster room's one door."""


def _contracts() -> list[dict[str, list[str]]]:
    import tomllib

    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])


def _contract(name: str) -> dict[str, list[str]]:
    return next(c for c in _contracts() if str(c["name"]).startswith(name))


def test_the_demo_borrows_no_engine_code() -> None:
    """The demo's contract lists no exception, and the only exception anywhere is the TUI's one door (the facade)."""
    assert "ignore_imports" not in _contract("The demo imports no engine rule")
    excepted = {str(c["name"]): c["ignore_imports"] for c in _contracts() if "ignore_imports" in c}
    tui = "The TUI reaches the cluster through the facade only, and never the demo, the registry or the CLI"
    assert excepted == {tui: ["screens.** -> wizard.cluster.facade", "screens.** -> wizard.cluster.errors"]}


def test_a_new_module_needs_no_list() -> None:
    """The contracts name rooms, not modules (review once found seven modules missing from hand-kept lists, the
    exec's websocket client among them): kubernetes is protected with one allowed importer, and the TUI is kept
    from the whole cluster room but its door, so a module added later is covered as it is. A real violation
    fails :func:`test_every_import_contract_is_kept` (shown with a deliberate bad import when this changed)."""
    kube = _contract("Only the gateway imports kubernetes")
    assert kube["type"] == "protected"
    assert kube["protected_modules"] == ["kubernetes"] and kube["allowed_importers"] == ["wizard.cluster.gateway.kube"]
    assert "wizard.cluster" in _contract("The TUI reaches the cluster")["forbidden_modules"]
    for contract in _contracts():
        for key in ("source_modules", "forbidden_modules", "protected_modules", "allowed_importers", "layers"):
            for module in contract.get(key, []):
                deep = any(part.count(".") > 1 for part in module.split(" | "))
                assert not deep or module in DOORS, (contract["name"], module)


def test_no_cluster_implementation_takes_the_facade() -> None:
    """The facade hands its implementations its Session, never itself (issue 38): a call that passes the facade's
    ``self`` to another module's function gives that module the front ends' door and the state behind it (the
    implementations once wrote ``cluster.host_verified |= …`` into it). The import contract keeps them from
    importing it; this keeps the facade from handing itself over."""
    contract = _contract("No cluster implementation imports the facade")
    assert contract["type"] == "protected" and contract["protected_modules"] == ["wizard.cluster.facade"]
    tree = ast.parse((ROOT / "wizard" / "cluster" / "facade.py").read_text())
    cluster = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Cluster")
    local = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    handed = [
        f"facade.py:{call.lineno}: {ast.unparse(call.func)}(self, …)"
        for call in ast.walk(cluster)
        if isinstance(call, ast.Call)
        and not (isinstance(call.func, ast.Name) and call.func.id in local)  # the module's own open_registry
        and not (isinstance(call.func, ast.Attribute) and ast.unparse(call.func.value) == "self")
        and any(isinstance(arg, ast.Name) and arg.id == "self" for arg in call.args)
    ]
    assert handed == [], "hand the implementations self.session, not the facade:\n" + "\n".join(handed)
