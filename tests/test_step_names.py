"""A step is declared once (``wizard/engine/steps.py``); everything else reads that declaration.

The TUI's flow attaches one screen and one ``applies`` rule to each declared step, in the same order;
each screen class gets its step from there; F1 help has a text for each step; the TUI snapshots are
named after their step (not its number, so a new step renames none of them); and no code in
``screens/`` or ``wizard/`` writes a step's name as a string literal where a step is meant.

"Where a step is meant" is decided from the syntax next to the literal, so the same word meaning an
answers key (``state.get("mode")``), a Kubernetes resource (``"nodes"``), a CLI command (``"apply"``),
a widget id or a worker group is left alone. By the code's own convention a name that holds a step
says so (``step``, ``start_step``, ``STEP``, ``step_named``…); a literal is a step when it is
* the value of a keyword, assignment target or parameter default whose name says step,
* compared with (``==``, ``in``…) or or-ed with an expression whose names say step,
* an argument of a callable whose name says step, or at the position of a parameter (or dataclass
  field) of a function or class in ``screens/`` or ``wizard/`` whose name says step,
* the value of a ``"step"`` key in a dict display, or a key of a dict display keyed by steps only.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

from screens import flow
from screens.help_text import HELP
from screens.steps.base import StepScreen
from wizard.engine import steps

ROOT = Path(__file__).resolve().parents[1]
DECLARATION = ROOT / "wizard" / "engine" / "steps.py"
NAMES = frozenset(steps.STEP_NAMES)
SNAPSHOTS = ROOT / "tests" / "snapshots" / "svg"


def test_every_step_is_declared_in_the_one_tuple_once() -> None:
    declared = [v for v in vars(steps).values() if isinstance(v, steps.StepSpec)]
    assert sorted(declared, key=steps.STEPS.index) == list(steps.STEPS)
    assert len(set(steps.STEP_NAMES)) == len(steps.STEPS)


def test_the_flow_attaches_a_screen_and_rule_to_every_declared_step_in_order() -> None:
    assert [step.spec for step in flow.STEPS] == list(steps.STEPS)
    assert flow.STEP_NAMES == steps.STEP_NAMES


def test_each_steps_screen_is_a_step_screen_that_knows_its_step() -> None:
    for step in flow.STEPS:
        module, _, name = step.screen.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, StepScreen), step.screen
        assert step.name == cls.STEP, step.screen
        assert step.fields == cls.FIELDS, step.screen


def test_help_has_a_text_for_every_step_and_no_other() -> None:
    assert set(HELP) == NAMES


def test_snapshots_are_named_after_their_step() -> None:
    pattern = re.compile(rf"(long-)?({'|'.join(sorted(NAMES))})(-[a-z0-9-]+)?\.(svg|txt)")
    files = sorted(p.name for p in SNAPSHOTS.iterdir())
    assert files and [name for name in files if not pattern.fullmatch(name)] == []


def _says_step(node: ast.AST | str | None) -> bool:
    """An expression (or a name) with a name in it that says it holds a step."""
    if node is None:
        return False
    if isinstance(node, str):
        return "step" in node.lower()
    return any(
        "step" in (n.id if isinstance(n, ast.Name) else n.attr).lower()
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    )


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _step_parameters(trees: list[ast.Module]) -> dict[str, set[int]]:
    """Callable name -> positions of its parameters (or dataclass fields) that say step (self not counted)."""
    found: dict[str, set[int]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in ("self", "cls")]
            elif isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                names = [
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]
            positions = {i for i, name in enumerate(names) if _says_step(name)}
            if positions:
                found.setdefault(node.name, set()).update(positions)  # type: ignore[attr-defined]
    return found


def _is_step(node: ast.Constant, parent: ast.AST, takers: dict[str, set[int]]) -> bool:
    """The literal ``node`` stands for a step where it is written (see the module's docstring)."""
    if isinstance(parent, ast.keyword):
        return _says_step(parent.arg)
    if isinstance(parent, ast.Assign | ast.AnnAssign) and parent.value is node:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return any(_says_step(t) for t in targets)
    if isinstance(parent, ast.Compare | ast.BoolOp):
        operands = [parent.left, *parent.comparators] if isinstance(parent, ast.Compare) else parent.values
        return any(_says_step(o) for o in operands if o is not node)
    if isinstance(parent, ast.arguments):
        pairs = list(zip(reversed(parent.posonlyargs + parent.args), reversed(parent.defaults), strict=False))
        pairs += [(a, d) for a, d in zip(parent.kwonlyargs, parent.kw_defaults, strict=True) if d is not None]
        return any(default is node and _says_step(arg.arg) for arg, default in pairs)
    if isinstance(parent, ast.Call) and node in parent.args:
        return _says_step(parent.func) or parent.args.index(node) in takers.get(_callee(parent), set())
    if isinstance(parent, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) else None for k in parent.keys]
        if node in parent.values:
            key = keys[parent.values.index(node)]
            return isinstance(key, str) and _says_step(key)
        return len(keys) >= 2 and all(k in NAMES for k in keys)
    return False


def step_literals(files: list[Path]) -> Iterator[str]:
    """``path:line: 'name'`` for each step name written as a literal where a step is meant."""
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    quoted = re.compile("[\"'](?:{})[\"']".format("|".join(sorted(NAMES))))
    holding = [path for path, text in texts.items() if quoted.search(text)]  # only these can hold one
    defining = [path for path, text in texts.items() if "step" in text.lower()]  # only these define a step parameter
    trees = {path: ast.parse(texts[path], str(path)) for path in {*holding, *defining}}
    takers = _step_parameters([trees[path] for path in defining])
    for path in holding:
        for parent in ast.walk(trees[path]):
            for child in ast.iter_child_nodes(parent):
                if isinstance(child, ast.Constant) and child.value in NAMES and _is_step(child, parent, takers):
                    yield f"{path.relative_to(ROOT)}:{child.lineno}: {child.value!r}"


def code_files() -> list[Path]:
    files = sorted((ROOT / "screens").rglob("*.py")) + sorted((ROOT / "wizard").rglob("*.py"))
    return [path for path in files if path != DECLARATION]


def test_no_step_name_is_written_outside_its_declaration() -> None:
    found = list(step_literals(code_files()))
    assert found == [], "say steps.<STEP>.name (wizard/engine/steps.py) instead of:\n" + "\n".join(found)
