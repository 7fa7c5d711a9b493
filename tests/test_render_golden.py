"""Golden-file tests: every rendered output, per case, compared byte for byte with ``tests/golden/<case>/``.

Rewrite the files after an intended change with ``GOLDEN_UPDATE=1 pytest tests/test_render_golden.py``
and review the diff. Node facts come from NodeLists shaped like ``kubectl get nodes -o json``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.render_cases import (
    CASES,
    facts,
)
from wizard.engine.plan import Plan
from wizard.engine.render import (
    Rendered,
    advice_text,
    apply_patch,
    helm_yaml,
    images_table,
    mirror_script,
    render,
    to_yaml,
    validate_against_crd,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"


def rendered(case: str) -> Rendered:
    """Render one golden case."""
    answers, nodes = CASES[case]
    return render(Plan.model_validate(answers), facts(*nodes))


def outputs(case: str) -> dict[str, str]:
    """File name -> text of every golden output of a case."""
    answers, nodes = CASES[case]
    plan = Plan.model_validate(answers)
    result = rendered(case)
    return {
        "clusterpolicy.yaml": to_yaml([result.cluster_policy]),
        "nvidiadrivers.yaml": to_yaml(result.nvidia_drivers),
        "patch.yaml": to_yaml([apply_patch(plan, facts(*nodes))]),
        "helm-values.yaml": helm_yaml(result),
        "mirror.txt": mirror_script(result.mirror),
        "images.tsv": images_table(result.node_images),
        "advice.txt": advice_text(result.advice),
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str) -> None:
    folder = GOLDEN / case
    for name, text in outputs(case).items():
        path = folder / name
        if UPDATE:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            continue
        assert path.exists(), f"{path} is missing; run GOLDEN_UPDATE=1 pytest {__file__}"
        assert text == path.read_text(encoding="utf-8"), f"{case}/{name} differs from the golden file"


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_documents_validate_against_their_release_crd(case: str) -> None:
    result = rendered(case)
    bundle = result.plan.operator.bundle
    for doc in result.documents():
        assert validate_against_crd(doc, bundle) == [], f"{case}: {doc['kind']} {doc['metadata']['name']}"


def test_every_golden_folder_is_a_case() -> None:
    """A renamed or removed case must not leave a stale folder behind."""
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == sorted(CASES)
