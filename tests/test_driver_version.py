"""Driver versions are parsed once (issue 38, item 5): one ordering and one branch rule for the catalog, the
registry's tags, the branch checks and verification."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wizard.engine.branches import is_downgrade
from wizard.engine.catalog import parse_catalog
from wizard.engine.defaults import upstream_versions, versions_holding
from wizard.engine.driver_version import DriverVersion, branch_of, newest_first

ROOT = Path(__file__).resolve().parent.parent


def test_a_version_is_ordered_by_its_numbers_and_keeps_its_text() -> None:
    versions = [DriverVersion.parse(t) for t in ("580.65.06", "580.126.09.1", "570.195.03", "580", " 580.126.09 ")]
    assert [str(v) for v in sorted(versions, reverse=True)] == [
        "580.126.09.1",
        "580.126.09",
        "580.65.06",  # 65 < 126: numbers, not text ("65" > "126" as text)
        "580",
        "570.195.03",
    ]
    assert DriverVersion.parse("580.126.09").branch == "580"
    assert DriverVersion.parse("580").is_branch and not DriverVersion.parse("580.1").is_branch


@pytest.mark.parametrize("text", ["", "latest", "580-ubuntu22.04", "sha256:" + "a" * 64, "580.", ".580", "５８０"])
def test_what_is_no_version_is_refused(text: str) -> None:
    assert DriverVersion.parse_or_none(text) is None
    with pytest.raises(ValueError, match="is not a driver version"):
        DriverVersion.parse(text)


def test_the_rules_share_one_ordering() -> None:
    tags = ["580.65.06-ubuntu22.04", "580.126.09-ubuntu22.04", "570.195.03-ubuntu22.04", "latest-ubuntu22.04"]
    assert upstream_versions(tags, ["ubuntu22.04"]) == ["580.126.09", "580.65.06", "570.195.03"]
    listing = {"r.example/nvidia/driver": ["580-k-ubuntu22.04", "570-k-ubuntu22.04", "x-k-ubuntu22.04"]}
    assert versions_holding(listing, "driver", ["-k-ubuntu22.04"]) == {"r.example/nvidia": ["580", "570"]}
    assert newest_first(["9.1", "10.0", "nope"]) == ["10.0", "9.1"]
    assert is_downgrade("580.126.09", "580.65.06") and not is_downgrade("580.65.06", "580.126.09")
    assert is_downgrade("580", "570") and not is_downgrade("580.126.09", "580")
    assert not is_downgrade("latest", "570") and not is_downgrade("sha256:" + "a" * 64, "570")


def test_the_catalog_refuses_what_is_no_version() -> None:
    entry = "{driver: '%s', kernel: 5.15.0-1063-nvidia, os: ubuntu22.04, status: published}"
    assert parse_catalog("schema: 1\nentries: [%s]" % (entry % "580.126.09"))[0].branch == "580"
    with pytest.raises(ValueError, match=r"entries\[0\]\.driver: .*driver version"):
        parse_catalog("schema: 1\nentries: [%s]" % (entry % "580-x"))


def test_the_branch_is_worked_out_one_way() -> None:
    """No rule cuts a version at its first dot by hand: branch_of (or DriverVersion.branch) does it."""
    assert branch_of(" 580.126.09 ") == "580" and branch_of("sha256:abc") == "sha256:abc"
    by_hand = []
    for path in [*(ROOT / "wizard").rglob("*.py"), *(ROOT / "screens").rglob("*.py")]:
        if "demo" in path.relative_to(ROOT).parts[:2] or path.name in {"driver_version.py", "naming.py"}:  # naming: OS
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            # `<version>.split(".", 1)[0]`: a branch cut by hand
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr in {"split", "partition"}
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
                and node.value.args[0].value == "."
                and isinstance(node.slice, ast.Constant)
                and node.slice.value == 0
            ):
                by_hand.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert by_hand == []


def test_the_plan_parses_its_version_once_its_field_rule_decides() -> None:
    from wizard.engine.plan import Plan

    def driver(mode: str, version: str) -> DriverVersion | None:
        plan = Plan.model_validate({"mode": mode, "driver": {"repository": "r.example/m", "version": version}})
        return plan.driver.driver_version

    assert driver("upstream", "580.126.20") == DriverVersion.parse("580.126.20")
    assert driver("precompiled", "580") == DriverVersion.parse("580")
    assert driver("upstream", "sha256:" + "a" * 64) is None
    with pytest.raises(ValueError, match="suffix"):  # the plan's rule, not DriverVersion's, refuses a suffixed tag
        driver("upstream", "580.126.20-ubuntu22.04")


@pytest.mark.parametrize(
    ("image", "version", "runs"),
    [
        ("nvcr.io/nvidia/driver:580.126.20-ubuntu22.04", "580.126.20", True),
        ("nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04", "580", True),
        ("nvcr.io/nvidia/driver:580.126.20-ubuntu22.04", "580", False),  # another version of the branch
        ("nvcr.io/nvidia/driver:570.195.03-ubuntu22.04", "580.126.20", False),
        ("registry.example.com:5000/driver", "580", False),  # no tag: latest
        ("nvcr.io/nvidia/driver@sha256:" + "a" * 64, "sha256:" + "a" * 64, True),
        ("nvcr.io/nvidia/driver@sha256:" + "a" * 64, "580", False),
    ],
)
def test_a_daemonset_template_runs_the_version_its_tag_starts_with(image: str, version: str, runs: bool) -> None:
    from wizard.cluster.rollouts.rollout_verdict import DaemonSetStatus

    assert DaemonSetStatus("d", 1, 1, 1, image=image).runs(version) is runs
