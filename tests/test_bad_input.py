"""The catalogue of bad input: every case exits 2 with a clear message naming what is wrong, no traceback."""

import json
from pathlib import Path

import pytest

from tests.fixtures_demo import ClusterFactory
from wizard.cli.main import main
from wizard.demo.serve import DemoClusterThread

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
    pytest.importorskip("wizard.engine.render")
    nodes = json.loads(GOOD_NODES.read_text())
    nodes["items"] = [n for n in nodes["items"] if "nvidia.com/gpu.present" not in n["metadata"]["labels"]]
    path = tmp_path / "cpu-only.json"
    path.write_text(json.dumps(nodes))
    code, out, err = _run(capsys, "render", "--answers", str(GOOD_ANSWERS), "--nodes", str(path))
    assert code == 0
    assert "kind: ClusterPolicy" in out
    assert "no GPU nodes" in err


# -- kubeconfigs and cluster-command flags ---------------------------------------------------------------

KUBECONFIG = (
    "apiVersion: v1\nkind: Config\n{current}"
    "clusters: [{{name: c, cluster: {{server: '{server}'{cluster_extra}}}}}]\n"
    "users: [{{name: u, user: {{token: t{user_extra}}}}}]\n"
    "contexts: [{{name: a, context: {{cluster: {cluster}, user: {user}}}}}]\n"
)


def kubeconfig_text(**changes: str) -> str:
    """A one-context kubeconfig (context ``a``, cluster ``c``, user ``u``) with some fields changed."""
    values = {
        "current": "current-context: a\n",
        "server": "https://127.0.0.1:6443",
        "cluster_extra": "",
        "user_extra": "",
        "cluster": "c",
        "user": "u",
    }
    return KUBECONFIG.format(**(values | changes))


BAD_KUBECONFIGS: list[tuple[str, str | None, list[str], str]] = [
    # (id, kubeconfig text (None: no such file), extra flags, text the error must contain)
    ("kc-missing-file", None, [], "no kubeconfig found (looked at"),
    ("kc-malformed-yaml", "apiVersion: v1\nclusters: [unclosed\n", [], "kubeconfig:3: not valid YAML"),
    ("kc-not-a-mapping", "- a\n- b\n", [], "not a kubeconfig (expected clusters, contexts and users lists)"),
    ("kc-contexts-not-list", "contexts: {a: 1}\n", [], "not a kubeconfig"),
    ("kc-unknown-context", kubeconfig_text(), ["--context", "prod"], "context 'prod' is not in the kubeconfig"),
    ("kc-no-current-context", kubeconfig_text(current=""), [], "sets no current context"),
    ("kc-empty", "", [], "sets no current context"),
    ("kc-missing-user", kubeconfig_text(user="nobody"), [], "names user 'nobody', which is not in the kubeconfig"),
    ("kc-missing-cluster", kubeconfig_text(cluster="gone"), [], "names cluster 'gone', which is not in the kubeconfig"),
    ("kc-server-not-url", kubeconfig_text(server="my-cluster:6443"), [], "server 'my-cluster:6443' is not an https://"),
    (
        "kc-missing-ca-file",
        kubeconfig_text(cluster_extra=", certificate-authority: /nonexistent/ca.crt"),
        [],
        "cluster 'c': certificate-authority /nonexistent/ca.crt does not exist",
    ),
    (
        "kc-missing-token-file",
        kubeconfig_text(user_extra=", tokenFile: token.txt"),
        [],
        "user 'u': tokenFile token.txt does not exist",
    ),
]


def _exit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Exit code and stderr, whether the error came from argparse (SystemExit) or a handler (return)."""
    try:
        code = main(list(argv))
    except SystemExit as exited:
        code = int(exited.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "flags", "expected"), [c[1:] for c in BAD_KUBECONFIGS], ids=[c[0] for c in BAD_KUBECONFIGS]
)
def test_bad_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, flags: list[str], expected: str
) -> None:
    path = tmp_path / "kubeconfig"
    if text is not None:
        path.write_text(text)
    code, err = _exit(capsys, "discover", "--kubeconfig", str(path), *flags)
    assert code == 2
    assert expected in err, err
    assert err.startswith("gpu-wizard: error: ") and "Traceback" not in err
    if expected.startswith(("context '", "names ")) or "current context" in expected or " names " in expected:
        assert "valid" in err or "the kubeconfig's" in err  # a name that is not there: says which ones are


@pytest.fixture(scope="module")
def tls_demo(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    return demo_cluster_module("existing-install")


def test_kubeconfig_server_refusing_or_not_trusted(
    tls_demo: DemoClusterThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cluster_util import kubeconfig
    from tests.fixtures_registry import free_port
    from wizard.demo.api import tls

    other_ca, _ = tls.make_certificate(tmp_path)  # a CA, but not the one that signed the server's certificate
    cases = [
        (
            kubeconfig(tmp_path / "k1", f"https://127.0.0.1:{free_port()}", token="t"),
            "cannot connect to https://127.0.0.1",
        ),
        (kubeconfig(tmp_path / "k2", tls_demo.url, token=tls_demo.token, ca=other_ca), "TLS verification of"),
        (kubeconfig(tmp_path / "k3", tls_demo.url, token="expired", ca=tls_demo.ca_path), "rejected the credentials"),
    ]
    for path, expected in cases:
        code, err = _exit(capsys, "discover", "--kubeconfig", str(path))
        assert code == 2 and expected in err and "Traceback" not in err, err
        assert "  hint: " in err  # and what to do about it


def test_bad_cluster_flags(tls_demo: DemoClusterThread, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ["--kubeconfig", str(tls_demo.kubeconfig_path)]
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text("name: broken\nnodes: 5\n")
    auth = tmp_path / "auth.json"
    auth.write_text("{not json")
    not_backup = tmp_path / "not-a-backup.yaml"
    not_backup.write_text("kind: ClusterPolicy\n")
    damaged = tmp_path / "damaged.yaml"
    damaged.write_text('# gpu-wizard-backup: {"version": 1}\n---\nspec: [\n')
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: upstream\noperator: {version: v26.3.3}\ndriver: {version: '580.126.20', repository: nvcr.io/nvidia}\n"
    )
    cases: list[tuple[list[str], str]] = [
        (["verify", *cluster, "--concurrency", "0"], "--concurrency: 0 is not a positive number of nodes"),
        (["verify", *cluster, "--concurrency", "many"], "argument --concurrency: invalid int value: 'many'"),
        (["verify", *cluster, "--timeout", "0"], "argument --timeout: 0 is not a positive number of seconds"),
        (["discover", *cluster, "--request-timeout", "-1"], "argument --request-timeout: -1 is not a positive"),
        (["apply", *cluster, "--answers", str(answers), "--wait-timeout", "nan"], "argument --wait-timeout: nan"),
        (["discover", "--demo", "no-such-scenario"], "unknown scenario 'no-such-scenario'; bundled scenarios:"),
        (["discover", "--demo", str(scenario)], "nodes: must be a list"),
        (["discover", *cluster, "-o", "xml"], "argument -o/--output: invalid choice: 'xml'"),
        (["verify", *cluster, "--registry-auth-file", str(tmp_path / "none.json")], "--registry-auth-file: auth file"),
        (["verify", *cluster, "--registry-auth-file", str(auth)], "not valid JSON (line 1, column 2)"),
        (["rollback", *cluster, "--backup", str(tmp_path / "none.yaml")], "none.yaml: cannot read the backup"),
        (["rollback", *cluster, "--backup", str(not_backup)], "not a gpu-wizard backup"),
        (["rollback", *cluster, "--backup", str(damaged)], "damaged.yaml:4: damaged backup"),
        (["apply", *cluster, "--answers", str(answers), "--yes", "--backup-dir", str(blocked)], "nothing was applied"),
        (["apply", *cluster, "--answers", str(tmp_path / "none.yaml")], "none.yaml: no such file"),
    ]
    for argv, expected in cases:
        code, err = _exit(capsys, *argv)
        assert code == 2, (argv, err)
        assert expected in err, (argv, err)
        assert "Traceback" not in err
    live = tls_demo.store.get("clusterpolicies", "cluster-policy")
    assert live is not None and live["spec"]["driver"]["version"] == "570.195.03"  # the blocked apply changed nothing


def test_catalogue_covers_kubeconfigs_and_flags_too() -> None:
    assert len(BAD_ANSWERS) + len(BAD_NODELISTS) + len(BAD_KUBECONFIGS) + 3 + 15 >= 70
