"""The suite's own layout: no module under tests/ imports a test module (issue 26 item 6), and
the top level of tests/ holds test modules only, every helper in ``tests/helpers/`` (issue 38 item 6).

A test module imported by another one runs its import-time work twice over, ties its tests'
helpers to another file's reorganisation, and hides which file a helper belongs to. What tests
share lives in ``tests/helpers/`` (or a fixture plugin named in ``conftest.py``).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str) -> list[str]:
    """The ``test_*`` modules a module's source imports, however it spells the import."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            # `from tests import test_x` and `from . import test_x` name the module among the names
            modules = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [m for m in modules if m.rpartition(".")[2].startswith("test_")]
    return found


def test_the_check_finds_each_spelling_of_an_import() -> None:
    source = (
        "import tests.test_a\nfrom tests.test_b import x\nfrom .test_c import y\n"
        "from tests import test_d\nfrom . import test_e\ndef f():\n    from tests.test_f import z\n"
        "from tests.helpers.tui import demo_app\nimport pytest\n"
    )
    assert imported_test_modules(source) == [
        "tests.test_a",
        "tests.test_b",
        "test_c",
        "tests.test_d",
        ".test_e",
        "tests.test_f",
    ]


def test_no_module_under_tests_imports_a_test_module() -> None:
    offenders = {
        str(path.relative_to(TESTS)): found
        for path in sorted(TESTS.rglob("*.py"))
        if (found := imported_test_modules(path.read_text()))
    }
    assert not offenders, f"move what they share to tests/helpers/: {offenders}"


def test_the_top_level_of_tests_holds_only_test_modules() -> None:
    """A helper beside the tests is one more place to look for it: helpers, fixture plugins and the
    hostile-input cases live under ``tests/helpers/`` (data stays in its own folders)."""
    allowed = {"__init__.py", "conftest.py"}
    strays = sorted(p.name for p in TESTS.glob("*.py") if p.name not in allowed and not p.name.startswith("test_"))
    assert not strays, f"move these to tests/helpers/ (fixture plugins to tests/helpers/fixtures/): {strays}"
