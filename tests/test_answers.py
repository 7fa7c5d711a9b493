"""The answers file: round-trip with comments, field errors with lines, atomic private saves."""

import contextlib
import os
import stat
import time
from pathlib import Path

import pytest

from wizard.engine.answers import AnswersError, dump_answers, example_answers, load_answers, parse_answers, save_answers
from wizard.engine.plan import Mode, Plan, check_absolute_path, check_driver_version, check_repository


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
    # precompiled images are per OS: the source comes from the nodes' OS (tests/test_answers_source.py)
    text = "version: 1\ndriver: {version: '580.126.09.1', repository: reg.local/nv}\n"
    plan, _ = parse_answers(text, tag_oses=["sle-micro5.5"])
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


GOOD_DRIVER = "version: 1\ndriver:\n  version: '580'\n  repository: r.io/a\n"
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
    # issue 25, item 5: the toolkit's folder apart from the driver's, in every mode
    (GOOD_DRIVER + "toolkit:\n  installDir: /run/nvidia/driver\n", "toolkit.installDir", 6, "is driverInstallDir"),
    (
        GOOD_DRIVER + "toolkit:\n  installDir: /run/nvidia/driver/tk\n",
        "toolkit.installDir",
        6,
        "inside driverInstallDir",
    ),
    (
        "version: 1\nmode: preinstalled\ntoolkit:\n  installDir: /opt/nv\nhostPaths:\n  driverInstallDir: /opt/nv/drv\n",
        "toolkit.installDir",
        4,
        "contains driverInstallDir",
    ),
    ("version: 1\ntoolkit:\n  installDir: usr/nvidia\n", "toolkit.installDir", 3, "such as /usr/local/nvidia"),
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


# -- bounds: what the loader refuses before ruamel's round-trip loader sees it, and how fast --------------

PRE = "version: 1\nmode: preinstalled\n"


def _cpu_seconds(text: str) -> float:
    """CPU time (not wall: the test machine is shared) to parse or refuse ``text``."""
    started = time.process_time()
    with contextlib.suppress(AnswersError):
        parse_answers(text, "a.yaml")
    return time.process_time() - started


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("5 MB of comment lines", PRE + "# comment\n" * 500_000),
        ("one 5 MB comment line", PRE + "#" + "x" * 5_000_000 + "\n"),
        ("1 MiB of comment lines", PRE + "# c\n" * 262_000),
        ("40k comment lines", PRE + "# a comment line\n" * 40_000),
    ],
)
def test_huge_files_answer_within_a_second(name: str, text: str) -> None:
    assert _cpu_seconds(text) < 1.0, name


def test_the_largest_accepted_file_parses_within_a_second() -> None:
    """Just inside every bound: 500 lines of 1,000 characters (blanks and 64 KiB of comments)."""
    text = PRE + "#" + "c" * 999 + "\n" + "operator:\n  namespace: gpu\n" + (" " * 1000 + "\n") * 490
    assert len(text) < 1 << 20
    started = time.process_time()
    plan, _ = parse_answers(text)
    assert time.process_time() - started < 1.0
    assert plan.operator.namespace == "gpu"


@pytest.mark.parametrize(
    ("text", "field", "line", "words"),
    [
        ('a: &x "v"\nb: *x\n', "a", 1, "anchors and aliases"),
        (
            PRE + "toolkit: {installDir: " + "[" * 20 + "]" * 20 + "}\n",
            "toolkit.installDir.0.0.0.0.0.0.0.0.0.0.0.0.0.0",
            3,
            "deeper than 16",
        ),
        (
            PRE + "driver:\n  imagePullSecrets:\n    - " + "9" * 200 + "\n",
            "driver.imagePullSecrets.0",
            5,
            "a number of 200",
        ),
        (PRE + "x: !!binary aGk=\n", "x", 3, "YAML tags"),
        ("version: 1.0\n", "version", 1, "must be the integer 1"),
        ("version: yes\n", "version", 1, "must be the integer 1"),
    ],
)
def test_bounds_name_field_and_line(text: str, field: str, line: int, words: str) -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers(text, "a.yaml")
    error = caught.value.errors[0]
    assert (error.field, error.line) == (field, line) and words in error.message, error


def test_a_bounded_read_of_an_endless_file() -> None:
    with pytest.raises(AnswersError, match=r"/dev/zero: cannot read the file: not text \(a NUL byte at byte 0\)"):
        load_answers("/dev/zero")


def test_messages_escape_control_characters() -> None:
    with pytest.raises(AnswersError) as caught:
        parse_answers('version: 1\n"\\e[2J\\x9b": 1\n', "a\x1b.yaml")
    assert "\x1b" not in str(caught.value) and "\x9b" not in str(caught.value)
    assert "a\\x1b.yaml:2: \\x1b[2J\\x9b: unknown key" in str(caught.value)


# -- grammars: what stays valid ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "repository",
    [
        "nvcr.io/nvidia",
        "nvidia",
        "localhost:5000/mlops",
        "Registry.Example.com/a/b-c",
        "10.0.0.1:5000/x",
        "docker.io/a__b",
    ],
)
def test_valid_repositories(repository: str) -> None:
    assert check_repository(repository) == repository


@pytest.mark.parametrize(
    "path", ["/usr/local/nvidia", "/run/nvidia/toolkit-install", "/opt/nvidia", "/usr/local/glibc", "/var/lib/nv_1.2+x"]
)
def test_valid_host_paths(path: str) -> None:
    assert check_absolute_path(path) == path


@pytest.mark.parametrize("version", ["580", "580.126.09.1", "570.195.03"])
def test_valid_driver_versions(version: str) -> None:
    assert check_driver_version(version, Mode.PRECOMPILED) == version


def test_operatortype_preinstalled_is_another_way_to_say_the_mode() -> None:
    """NVIDIA's documents say ``operatortype=preinstalled``: accepted, saved back as ``mode``, never rendered."""
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.render import render, to_yaml

    plan, doc = parse_answers("version: 1\noperatortype: preinstalled  # as the docs say\n")
    assert plan.mode is Mode.PREINSTALLED and "operatortype" not in doc and doc["mode"] == "preinstalled"
    assert "operatortype" not in dump_answers(plan, doc)
    assert "operatortype" not in to_yaml(render(plan, ClusterFacts([])).documents())
    same, _ = parse_answers("version: 1\nmode: preinstalled\noperatortype: Pre-Installed\n")
    assert same.mode is Mode.PREINSTALLED


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\noperatortype: gpu\n", "answers.yaml:2: operatortype: 'gpu': only 'preinstalled'"),
        ("version: 1\nmode: upstream\noperatortype: preinstalled\n", "answers.yaml:3: operatortype: says preinstalled"),
        ("version: 1\noperatortype: [preinstalled]\n", "answers.yaml:2: operatortype:"),
    ],
)
def test_operatortype_that_means_something_else_is_refused(text: str, message: str) -> None:
    with pytest.raises(AnswersError) as failed:
        parse_answers(text, "answers.yaml")
    assert message in failed.value.errors[0].render("answers.yaml")
