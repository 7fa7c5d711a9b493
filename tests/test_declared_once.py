"""Concepts declared once (issue 38): an image name is built by one function, the operator's names are written once.

These read the product's source: a new f-string that builds ``repository/image:tag`` or a precompiled tag, or a
new copy of an operator name, fails here and names its file and line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMING = ROOT / "wizard" / "engine" / "naming.py"
OPERATOR_NAMES = ROOT / "wizard" / "engine" / "operator_names.py"
# `{repository}/{image}:{version}` and `{version}-{kernel}-{os}`, however the fields are spelled
IMAGE_NAME = re.compile(r"\}/\{[^}]+\}:\{")
PRECOMPILED_TAG = re.compile(r"\{[^}]+\}-\{[^}]*kernel[^}]*\}-\{")
# the tag suffixes on their own: `-{kernel}-{os}`, `-{tag_os}`
TAG_SUFFIX = re.compile(r"-\{[^}]*kernel[^}]*\}-\{|\"-\{[^}]*(?:tag_os|os_tag)[^}]*\}\"")
# a registry host and the repository path below it: `{host}/{repo}`
HOST_REPOSITORY = re.compile(r"\{[^}]*host[^}]*\}/\{[^}]*(?:repo|name)")
# `{repository}/{image}` (a repository to list tags of) or `{source}/{rest of a reference}` (an image moved)
UNDER_REPOSITORY = re.compile(r"\{[^}]*(?<!\w)(?:repository|source|where)\b[^}]*\}/\{")
IMAGE_PATTERNS = (IMAGE_NAME, PRECOMPILED_TAG, TAG_SUFFIX, UNDER_REPOSITORY, HOST_REPOSITORY)
OPERATOR_LITERALS = (
    '"nvidia-driver-ctr"',
    '"app.kubernetes.io/component=nvidia-driver"',
    '"k8s-driver-manager"',
    '"app=nvidia-operator-validator"',
    '"nvidia-driver-daemonset"',
    # the driver selector split in two (a backup's label check, the leftovers rule once wrote it so)
    '"app.kubernetes.io/component", "nvidia-driver"',
    '= "nvidia-driver"',
)


def product_sources() -> list[Path]:
    """The engine, cluster, registry, CLI and TUI code; the demo reproduces the operator on its own (by rule)."""
    files = [*(ROOT / "wizard").rglob("*.py"), *(ROOT / "screens").rglob("*.py")]
    return sorted(f for f in files if "demo" not in f.relative_to(ROOT).parts[:2])


def lines_matching(paths: list[Path], found: Callable[[str], object]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if found(line)
    ]


def test_only_naming_builds_an_image_name() -> None:
    others = [path for path in product_sources() if path != NAMING]
    assert len(others) > 100  # the walk found the product
    built = lines_matching(others, lambda line: any(pattern.search(line) for pattern in IMAGE_PATTERNS))
    assert built == [], (
        "build image names with wizard.engine.naming (image_path, image_repository, precompiled_tag, "
        "precompiled_suffix, upstream_suffix, rebased):\n" + "\n".join(built)
    )


def test_the_image_patterns_find_what_they_stand_for() -> None:
    """Each pattern finds the hand-built names it was written against (the grep above cannot pass by matching nothing)."""
    built_by_hand = (
        'f"{repository}/{image}:{version}"',
        'f"{version}-{node.kernel}-{tag_os}"',
        '{t.removesuffix(f"-{kernel}-{tag_os}") for t in tags}',
        'per_os = [t.endswith(f"-{tag_os}") for t in tags]',
        'listing.get(f"{repository}/{image}", [])',
        'return f"{plan.driver.source}/{target[len(prefix) :]}"',
        'registry.list_tags(f"{where}/{image}")',
        'return f"{canonical_host(host)}/{repo}"',
    )
    for line in built_by_hand:
        assert any(pattern.search(line) for pattern in IMAGE_PATTERNS), line
    assert lines_matching([NAMING], lambda line: any(p.search(line) for p in IMAGE_PATTERNS))  # naming builds them


def test_the_operators_names_are_written_once() -> None:
    others = [path for path in product_sources() if path != OPERATOR_NAMES]
    others.append(ROOT / "tests" / "realcluster" / "kwokconfig.py")
    written = lines_matching(others, lambda line: any(literal in line for literal in OPERATOR_LITERALS))
    assert written == [], "import the operator's names from wizard.engine.operator_names:\n" + "\n".join(written)
