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
    assert rec.value == "upstream" and rec.reason.endswith(f"lacks 580-{K2}-ubuntu22.04")  # what precompiled needs
    assert TWO_KERNELS.recommend_mode({}, ["gpu-1"]).value == "precompiled"  # not listed: as before


def test_answers_init_takes_the_same_rule_and_the_held_branch_as_version() -> None:
    answers = default_answers(TWO_KERNELS, precompiled_tags=BOTH)
    assert answers["mode"] == "precompiled" and answers["driver"]["version"] == "580"
    answers, why = newcomer_answers(NewcomerInputs(TWO_KERNELS, precompiled_tags=BOTH))
    assert answers["mode"] == "precompiled" and "the registry holds a precompiled image" in why["mode"]
    assert "580-" in why["driver.version"]
    assert default_answers(TWO_KERNELS)["mode"] == "upstream"  # without the registry's tags: the nodes' rule


def test_one_rule_for_the_branches_the_registry_serves_and_the_tags_it_lacks() -> None:
    """The Driver step's branches and Mode's recommendation come from one engine function (a review found a copy in
    screens): supported branches only, the release's default branch first, then newest."""
    from wizard.engine.precompiled_tags import held_branches, missing_tags, release_branches

    groups = [(K1, "ubuntu22.04"), (K2, "ubuntu22.04")]
    supported, default = release_branches("v26.7.0")
    assert "580" in supported and default in supported
    tags = [f"{b}-{k}-ubuntu22.04" for b in ("580", default, "470") for k in (K1, K2)]
    assert held_branches(tags, groups, "v26.7.0") == [default, "580"]  # 470: not a branch v26.7.0 supports
    assert held_branches(tags[:1], groups, "v26.7.0") == []
    assert missing_tags(tags[:1], groups, "v26.7.0") == [f"580-{K2}-ubuntu22.04"]  # the branch held the furthest
    assert missing_tags([], groups, "v26.7.0") == [f"{default}-{K1}-ubuntu22.04", f"{default}-{K2}-ubuntu22.04"]
    assert missing_tags(tags, groups, "v26.7.0") == []
    held = TWO_KERNELS.precompiled_held(tags, "v26.7.0") or []
    assert sorted(held) == sorted([f"{default}-{K1}-ubuntu22.04", f"{default}-{K2}-ubuntu22.04"])


def test_the_secure_boot_fix_names_the_tags_the_registry_lacks_instead_of_precompiled() -> None:
    """Defect 3's other half: "use mode: precompiled" while the registry lacks the signed tuple is a fix that cannot
    work; the fix names the exact tag (and where) to push first."""
    from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings
    from wizard.engine.modes import Mode

    state = HostState("gpu-1", os_id="ubuntu", kernel=K1, secure_boot=True, package_source=True)
    plain = host_findings(DoctorTarget(Mode.UPSTREAM), state)
    assert [c.check for c in plain] == ["secure-boot-unsigned"] and plain[0].hint.startswith("use mode: precompiled")
    missing = (f"580-{K1}-ubuntu22.04",)
    lacking = DoctorTarget(Mode.UPSTREAM, precompiled_missing=missing, precompiled_from="nvcr.io/nvidia/driver")
    (check,) = host_findings(lacking, state)
    assert check.check == "secure-boot-unsigned" and not check.hint.startswith("use mode: precompiled")
    assert f"nvcr.io/nvidia/driver lacks 580-{K1}-ubuntu22.04: push or mirror that tag there" in check.hint


def test_secure_boot_off_ubuntu_says_upstream_is_refused_and_what_would_load() -> None:
    """The secure-boot scenario (Rocky 9.4, Secure Boot on both nodes) walked at 80×24: Mode said only "Upstream —
    rocky: NVIDIA's driver image compiles the module on the node for any kernel", the mode the host check had just
    found refused there, with no word of it."""
    rocky = facts(CP, node("gpu-1", os_id="rocky", version_id="9.4", kernel="5.14.0-427.13.1.el9_4.x86_64"))
    rec = rocky.recommend_mode({}, ["gpu-1"], precompiled_tags=[])
    assert "Secure Boot is on (gpu-1): an upstream build is refused there" in rec.reason, rec.reason
    assert "mode: preinstalled" in rec.reason
    assert "Secure Boot" not in rocky.recommend_mode({}, [], precompiled_tags=[]).reason
