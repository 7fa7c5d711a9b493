"""``gpu-wizard examples [NAME]`` and ``answers init --example NAME``: the bundled examples, for installed users.

The README's examples live in the package (``wizard.assets``: ``examples/NAME.answers.yaml`` and
``NAME.nodes.json``), so a wheel installed with pipx or uv has them without the repository:
``gpu-wizard examples`` lists them, ``gpu-wizard examples NAME`` writes both files into a folder
(the current one by default) and says how to render them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from wizard.cli.common import EXIT_OK, UsageError

ANSWERS, NODES = ".answers.yaml", ".nodes.json"


def example_names() -> list[str]:
    """The bundled examples' names (``sle-micro-precompiled``, …)."""
    from wizard.bundled import asset_names

    return [name.removesuffix(ANSWERS) for name in asset_names("examples") if name.endswith(ANSWERS)]


def example_text(name: str, suffix: str = ANSWERS) -> str:
    """One bundled example file's text; UsageError naming the valid examples when ``name`` is not one."""
    names = example_names()
    if name not in names:
        raise UsageError(f"--example: {name!r} is not a bundled example; valid: {', '.join(names)}")
    from wizard.bundled import asset_text

    return asset_text("examples", name + suffix)


def _summary(name: str) -> str:
    """The mode line of an example's answers (``precompiled``) and its node count."""
    import json

    mode = next(
        (
            line.split(":", 1)[1].split("#", 1)[0].strip()
            for line in example_text(name).splitlines()
            if line.startswith("mode:")
        ),
        "?",
    )
    nodes = json.loads(example_text(name, NODES)).get("items", [])
    return f"{mode} mode, {len(nodes)} nodes"


def cmd_examples(args: argparse.Namespace) -> int:
    """``gpu-wizard examples [NAME] [-d DIR] [--force]``."""
    from wizard.engine.textsafe import shell_command

    if args.name is None:
        for name in example_names():
            sys.stdout.write(f"{name:32} {_summary(name)}\n")
        sys.stdout.write("write one into the current folder with: gpu-wizard examples NAME\n")
        return EXIT_OK
    from wizard.atomic_write import write_private

    folder = Path(args.dir)
    targets = {folder / (args.name + suffix): example_text(args.name, suffix) for suffix in (ANSWERS, NODES)}
    existing = [str(path) for path in targets if path.exists()]
    if existing and not args.force:
        raise UsageError(f"{existing[0]}: already exists; pass --force to overwrite")
    for path, text in targets.items():
        write_private(path, text)
    answers, nodes = list(targets)
    then = shell_command(["gpu-wizard", "render", "--answers", str(answers), "--nodes", str(nodes)])
    sys.stderr.write(f"wrote {answers} and {nodes}; render them with: {then}\n")
    return EXIT_OK


def register(sub: Any) -> None:
    """Add ``examples`` to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`)."""
    examples = sub.add_parser("examples", help="list the bundled example answers files and NodeLists, or write one")
    examples.add_argument(
        "name", nargs="?", choices=example_names(), metavar="NAME", help="write NAME.answers.yaml and NAME.nodes.json"
    )
    examples.add_argument("-d", "--dir", default=".", metavar="DIR", help="where to write them (default: here)")
    examples.add_argument("--force", action="store_true", help="overwrite existing files")
    examples.set_defaults(handler=cmd_examples)
