"""Mode's recommendation follows what the pull registry holds (issue 35 item 2, defect 3): precompiled when the
registry holds a precompiled tag for every (kernel, OS) group, and Secure Boot recommends precompiled only where
the signed tuples are there. One rule (``ClusterFacts.recommend_mode``) for the TUI's Mode step and ``answers init``
(``wizard.engine.defaults.default_answers``, ``wizard.engine.newcomer``).
"""

from __future__ import annotations

from tests.helpers.render_cases import CP, facts, node
from wizard.engine.defaults import default_answers
from wizard.engine.newcomer import NewcomerInputs, newcomer_answers

K1, K2 = "5.15.0-1063-nvidia", "5.15.0-1048-nvidia"
TWO_KERNELS = facts(CP, node("gpu-1", kernel=K1), node("gpu-2", kernel=K2))
BOTH = [f"580-{K1}-ubuntu22.04", f"580-{K2}-ubuntu22.04", "580.126.20-ubuntu22.04", "latest"]


def test_every_group_held_recommends_precompiled_and_names_the_tags() -> None:
    rec = TWO_KERNELS.recommend_mode({}, precompiled_tags=BOTH)
    assert rec.value == "precompiled" and f"580-{K2}-ubuntu22.04" in rec.reason
    assert sorted(TWO_KERNELS.precompiled_held(BOTH, "v26.7.0") or []) == sorted(BOTH[:2])


def test_a_group_without_a_tag_or_tags_on_different_branches_keep_upstream() -> None:
    assert TWO_KERNELS.recommend_mode({}, precompiled_tags=BOTH[:1]).value == "upstream"
    split = [f"580-{K1}-ubuntu22.04", f"570-{K2}-ubuntu22.04"]  # no one branch serves every group
    assert TWO_KERNELS.precompiled_held(split, "v26.7.0") is None
    assert TWO_KERNELS.recommend_mode({}, precompiled_tags=[]).value == "upstream"


def test_secure_boot_recommends_precompiled_only_where_the_registry_holds_the_signed_tuples() -> None:
    assert TWO_KERNELS.recommend_mode({}, ["gpu-1"], precompiled_tags=BOTH).value == "precompiled"
    rec = TWO_KERNELS.recommend_mode({}, ["gpu-1"], precompiled_tags=BOTH[:1])
    assert rec.value == "upstream" and "Secure Boot" not in rec.reason
    assert TWO_KERNELS.recommend_mode({}, ["gpu-1"]).value == "precompiled"  # not listed: as before


def test_answers_init_takes_the_same_rule_and_the_held_branch_as_version() -> None:
    answers = default_answers(TWO_KERNELS, precompiled_tags=BOTH)
    assert answers["mode"] == "precompiled" and answers["driver"]["version"] == "580"
    answers, why = newcomer_answers(NewcomerInputs(TWO_KERNELS, precompiled_tags=BOTH))
    assert answers["mode"] == "precompiled" and "the registry holds a precompiled image" in why["mode"]
    assert "580-" in why["driver.version"]
    assert default_answers(TWO_KERNELS)["mode"] == "upstream"  # without the registry's tags: the nodes' rule
