"""The answers file: round-trip with comments, field errors with lines, atomic private saves."""

import os
import stat
from pathlib import Path

import pytest

from wizard.engine.answers import AnswersError, dump_answers, example_answers, load_answers, parse_answers, save_answers
from wizard.engine.plan import Mode, Plan


@pytest.mark.parametrize("mode", list(Mode))
def test_every_example_is_valid_and_keeps_its_comments(mode: Mode) -> None:
    plan, doc = parse_answers(example_answers(mode))
    assert plan.mode is mode
    text = dump_answers(plan, doc)
    assert "# target GPU Operator release" in text
    assert parse_answers(text)[0] == plan


def test_mode_defaults_fill_source_and_image() -> None:
    plan, _ = parse_answers("version: 1\nmode: upstream\ndriver: {version: '580.126.20', repository: reg.local/nv}\n")
    assert (plan.driver.source, plan.driver.image) == ("nvcr.io/nvidia", "driver")
    plan, _ = parse_answers("version: 1\ndriver: {version: '580.126.09.1', repository: reg.local/nv}\n")
    assert (plan.driver.source, plan.driver.image) == ("docker.io/alaudadockerhub", "nvidia-driver")
    assert plan.precompiled and plan.driver_enabled


def test_preinstalled_needs_no_image() -> None:
    plan, _ = parse_answers("version: 1\nmode: preinstalled\n")
    assert not plan.driver_enabled
    assert "image" not in plan.answers_dict()["driver"]


def test_edit_keeps_comments_and_key_order() -> None:
    plan, doc = parse_answers(example_answers(Mode.PRECOMPILED))
    edited = plan.model_copy(update={"driver": plan.driver.model_copy(update={"version": "570.172.08.1"})})
    text = dump_answers(Plan.model_validate(edited.model_dump()), doc)
    assert 'version: "570.172.08.1"' in text or "version: 570.172.08.1" in text
    assert text.index("operator:") < text.index("mode:") < text.index("driver:")
    assert "# where the cluster pulls from" in text


ERRORS = [
    # (answers text, field, line, words the message must contain)
    ("version: 1\nmode: magic\n", "mode", 2, "'precompiled', 'preinstalled' or 'upstream'"),
    ("version: 1\ndriver:\n  version: 580.126\n  repository: r.io/a\n", "driver.version", 3, "quote it"),
    (
        "version: 1\nmode: upstream\ndriver:\n  version: 580.126.20-ubuntu22.04\n  repository: r.io/a\n",
        "driver.version",
        4,
        "#1200",
    ),
    (
        "version: 1\ndriver:\n  version: 580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5\n  repository: r.io/a\n",
        "driver.version",
        3,
        "suffix",
    ),
    (
        "version: 1\ndriver:\n  version: 'sha256:" + "a" * 64 + "'\n  repository: r.io/a\n",
        "driver.version",
        3,
        "precompiled",
    ),
    ("version: 1\ndriver:\n  version: '580'\n  repository: http://r.io/a\n", "driver.repository", 4, "URL scheme"),
    ("version: 1\ndriver:\n  version: '580'\n  repository: R.io/Mixed Case\n", "driver.repository", 4, "registry"),
    ("version: 1\ndriver:\n  version: '580'\n  repository: r.io/a\n  image: drv:tag\n", "driver.image", 5, "tag"),
    (
        "version: 1\ndriver:\n  version: '580'\n  repository: r.io/a\n  colour: blue\n",
        "driver.colour",
        5,
        "unknown key",
    ),
    ("version: 1\ntoolkit:\n  installDir: usr/local\n", "toolkit.installDir", 3, "absolute"),
    ("version: 1\nhostPaths:\n  driverInstallDir: /run/nvidia/../x\n", "hostPaths.driverInstallDir", 3, "normalised"),
    ("version: 1\noperator:\n  version: v27.1.0\n", "operator.version", 3, "v26.7.0"),
    ("version: 1\noperator:\n  namespace: GPU_Operator\n", "operator.namespace", 3, "namespace"),
    ("version: 2\n", "version", 1, "1"),
    ("mode: upstream\n", "version", 1, "missing"),
    ("version: 1\ndriver:\n  repository: r.io/a\n", "driver.version", None, "required"),
    ("version: 1\ndriver:\n  version: '580'\n", "driver.repository", None, "required"),
    (
        "version: 1\ndriver:\n  imagePullSecrets: [Bad_Name]\n  version: '580'\n  repository: r.io/a\n",
        "driver.imagePullSecrets",
        3,
        "Secret",
    ),
    (
        "version: 1\ndriver:\n  version: '580'\n  repository: r.io/a\n  repoConfig: {configMapName: repo}\n",
        "driver.repoConfig.configMapName",
        5,
        "upstream",
    ),
    ("version: 1\ndriver: [1, 2]\n", "driver", 2, "valid"),
]


@pytest.mark.parametrize(("text", "field", "line", "words"), ERRORS)
def test_bad_answers_name_field_line_and_what_is_valid(text: str, field: str, line: int | None, words: str) -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text, "answers.yaml")
    errors = {e.field: e for e in caught.value.errors}
    assert field in errors, caught.value
    if line is not None:
        assert errors[field].line == line, caught.value
    assert words in errors[field].message
    assert "Traceback" not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line"), [("version: 1\nmode: [\n", 3), ("version: 1\n  bad: indent\n", 2), ("\tversion: 1\n", 1)]
)
def test_malformed_yaml_names_the_line(text: str, line: int) -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text, "a.yaml")
    assert caught.value.errors[0].line == line
    assert "malformed YAML" in str(caught.value)


def test_not_a_mapping() -> None:
    with pytest.raises(AnswersError, match="must be a mapping"):
        parse_answers("- 1\n- 2\n")


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(AnswersError, match="no such file"):
        load_answers(tmp_path / "nope.yaml")


def test_save_is_atomic_and_private(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "answers.yaml"
    plan, doc = parse_answers(example_answers(Mode.UPSTREAM))
    save_answers(path, plan, doc)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_answers(path)[0] == plan
    assert [p.name for p in path.parent.iterdir()] == ["answers.yaml"]
