"""The catalogue of bad input: every case exits 2 with a clear message naming what is wrong, no traceback."""

import json
from pathlib import Path

import pytest

from wizard.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"
GOOD_ANSWERS = EXAMPLES / "sle-micro-precompiled.answers.yaml"
GOOD_NODES = EXAMPLES / "sle-micro-precompiled.nodes.json"

BAD_ANSWERS: list[tuple[str, str, str]] = [
    # (id, answers text, text the error must contain)
    ("malformed-yaml", "version: 1\nmode: [\n", "answers.yaml:3: malformed YAML"),
    ("tab-indent", "\tversion: 1\n", "answers.yaml:1: malformed YAML"),
    ("not-mapping", "- a\n- b\n", "must be a mapping"),
    ("empty-file", "", "version: missing"),
    ("wrong-format-version", "version: 7\n", "answers.yaml:1: version:"),
    ("unknown-top-key", "version: 1\nfoo: 1\n", "answers.yaml:2: foo: unknown key; valid keys here: version, operator"),
    ("unknown-nested-key", "version: 1\ntoolkit:\n  dir: /x\n", "answers.yaml:3: toolkit.dir: unknown key"),
    ("bad-mode", "version: 1\nmode: compiled\n", "answers.yaml:2: mode: Input should be 'precompiled'"),
    ("mode-number", "version: 1\nmode: 3\n", "answers.yaml:2: mode:"),
    ("version-float", "version: 1\ndriver: {version: 580.1, repository: r.io/a}\n", "quote it"),
    (
        "version-os-suffix",
        "version: 1\nmode: upstream\ndriver: {version: 565.57.01-ubuntu22.04, repository: r.io/a}\n",
        "#1200",
    ),
    (
        "version-kernel-suffix",
        "version: 1\ndriver: {version: 580.126.09.1-5.14.21-default, repository: r.io/a}\n",
        "suffix",
    ),
    (
        "version-garbage",
        "version: 1\ndriver: {version: latest, repository: r.io/a}\n",
        "driver.version: 'latest' is not a driver version",
    ),
    (
        "digest-precompiled",
        "version: 1\ndriver: {version: 'sha256:" + "0" * 64 + "', repository: r.io/a}\n",
        "not supported in precompiled",
    ),
    (
        "digest-short",
        "version: 1\nmode: upstream\ndriver: {version: 'sha256:abc', repository: r.io/a}\n",
        "64 lower-case hex",
    ),
    ("missing-version", "version: 1\ndriver: {repository: r.io/a}\n", "driver.version: required in precompiled mode"),
    ("missing-repository", "version: 1\ndriver: {version: '580'}\n", "driver.repository: required"),
    ("repo-scheme", "version: 1\ndriver: {version: '580', repository: 'https://r.io/a'}\n", "URL scheme"),
    ("repo-uppercase", "version: 1\ndriver: {version: '580', repository: r.io/Mlops}\n", "not a registry/repository"),
    ("repo-with-tag", "version: 1\ndriver: {version: '580', repository: 'r.io/a:1'}\n", "not a registry/repository"),
    (
        "source-space",
        "version: 1\ndriver: {version: '580', repository: r.io/a, source: 'r.io/my repo'}\n",
        "driver.source",
    ),
    ("image-with-tag", "version: 1\ndriver: {version: '580', repository: r.io/a, image: 'drv:1'}\n", "carries a tag"),
    (
        "image-uppercase",
        "version: 1\ndriver: {version: '580', repository: r.io/a, image: Driver}\n",
        "not an image name",
    ),
    (
        "relative-installdir",
        "version: 1\nmode: preinstalled\ntoolkit: {installDir: opt/nvidia}\n",
        "toolkit.installDir: 'opt/nvidia' is not an absolute path",
    ),
    (
        "unnormalised-dir",
        "version: 1\nmode: preinstalled\nhostPaths: {driverInstallDir: /run//nvidia/}\n",
        "write it as '/run/nvidia'",
    ),
    ("dotdot-dir", "version: 1\nmode: preinstalled\nhostPaths: {driverInstallDir: /run/../etc}\n", "not normalised"),
    ("installdir-number", "version: 1\nmode: preinstalled\ntoolkit: {installDir: 5}\n", "toolkit.installDir"),
    (
        "unknown-release",
        "version: 1\nmode: preinstalled\noperator: {version: v24.9.0}\n",
        "valid: v25.10.1, v26.3.3, v26.7.0",
    ),
    ("release-garbage", "version: 1\nmode: preinstalled\noperator: {version: latest}\n", "operator.version"),
    ("bad-namespace", "version: 1\nmode: preinstalled\noperator: {namespace: GPU}\n", "operator.namespace"),
    (
        "repoconfig-precompiled",
        "version: 1\ndriver: {version: '580', repository: r.io/a, repoConfig: {configMapName: repos}}\n",
        "only used in upstream",
    ),
    (
        "repoconfig-bad-name",
        "version: 1\nmode: upstream\ndriver: {version: '580', repository: r.io/a, repoConfig: {configMapName: Repo_1}}\n",
        "ConfigMap name",
    ),
    ("pull-secret-bad", "version: 1\nmode: preinstalled\ndriver: {imagePullSecrets: ['a b']}\n", "Secret name"),
    (
        "pull-secrets-not-list",
        "version: 1\nmode: preinstalled\ndriver: {imagePullSecrets: regcred}\n",
        "driver.imagePullSecrets",
    ),
    (
        "crd-flag-string",
        "version: 1\nmode: preinstalled\ndriver: {useNvidiaDriverCRD: maybe}\n",
        "driver.useNvidiaDriverCRD",
    ),
    ("driver-is-list", "version: 1\ndriver: [a]\n", "driver:"),
]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BAD_ANSWERS], ids=[c[0] for c in BAD_ANSWERS])
def test_bad_answers_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(text)
    code, out, err = _run(capsys, "render", "--answers", str(answers), "--nodes", str(GOOD_NODES))
    assert code == 2
    assert out == ""
    assert expected in err, err
    assert "Traceback" not in err


BAD_NODELISTS: list[tuple[str, str, str]] = [
    ("not-json", "{nodes: [", "not valid JSON"),
    ("json-array", "[1, 2]", "not a NodeList"),
    ("no-items", '{"kind": "NodeList"}', "no 'items' list"),
    ("items-not-list", '{"kind": "NodeList", "items": {}}', "no 'items' list"),
    ("scalar", "42", "not a NodeList"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BAD_NODELISTS], ids=[c[0] for c in BAD_NODELISTS])
def test_bad_nodelist(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(text)
    code, _, err = _run(capsys, "render", "--answers", str(GOOD_ANSWERS), "--nodes", str(nodes))
    assert code == 2
    assert expected in err and str(nodes) in err
    assert "Traceback" not in err


def test_missing_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "render", "--answers", str(tmp_path / "a.yaml"), "--nodes", str(GOOD_NODES))
    assert code == 2 and "a.yaml: no such file" in err
    code, _, err = _run(capsys, "render", "--answers", str(GOOD_ANSWERS), "--nodes", str(tmp_path / "n.json"))
    assert code == 2 and "n.json: no such file" in err


def test_binary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blob = tmp_path / "answers.yaml"
    blob.write_bytes(b"\xff\xfe\x00\x01")
    code, _, err = _run(capsys, "render", "--answers", str(blob), "--nodes", str(GOOD_NODES))
    assert code == 2 and "cannot read" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["render", "--answers", str(GOOD_ANSWERS), "--nodes", str(GOOD_NODES), "-o", "xml"],
        ["render", "--nodes", str(GOOD_NODES)],
        ["answers", "init", "--mode", "magic"],
        ["answers"],
        ["no-such-command"],
    ],
    ids=["bad-output", "missing-answers-flag", "bad-mode-flag", "missing-action", "unknown-command"],
)
def test_bad_flags(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_answers_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "a.yaml"
    target.write_text("keep me")
    code, _, err = _run(capsys, "answers", "init", "-o", str(target))
    assert code == 2 and "already exists" in err and target.read_text() == "keep me"


def test_catalogue_has_at_least_forty_cases() -> None:
    assert len(BAD_ANSWERS) + len(BAD_NODELISTS) + 2 + 1 + 5 + 1 >= 40


def test_nodelist_without_gpu_nodes_is_a_warning_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("wizard.render")
    nodes = json.loads(GOOD_NODES.read_text())
    nodes["items"] = [n for n in nodes["items"] if "nvidia.com/gpu.present" not in n["metadata"]["labels"]]
    path = tmp_path / "cpu-only.json"
    path.write_text(json.dumps(nodes))
    code, out, err = _run(capsys, "render", "--answers", str(GOOD_ANSWERS), "--nodes", str(path))
    assert code == 0
    assert "kind: ClusterPolicy" in out
    assert "no GPU nodes" in err
