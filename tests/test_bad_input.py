"""The catalogue of bad input: every case exits 2 with a clear message naming what is wrong, no traceback."""

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as _run
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[1] / "assets" / "examples"
GOOD_ANSWERS = EXAMPLES / "sle-micro-precompiled.answers.yaml"
GOOD_NODES = EXAMPLES / "sle-micro-precompiled.nodes.json"

# The answers-file, NodeList, missing-file and flag cases moved to tests/helpers/hostile/cases_answers.py, where
# tests/test_hostile_catalog.py runs them as real CLI processes (exit code, message, time, memory).


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
    from tests.helpers.cluster import kubeconfig
    from tests.helpers.fixtures.registry import free_port
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
        (
            ["verify", *cluster, "--registry-auth-file", str(auth)],
            "not valid JSON (line 1, column 2: Expecting property name",
        ),
        (["rollback", *cluster, "--backup", str(tmp_path / "none.yaml")], "none.yaml: cannot read the backup"),
        (["rollback", *cluster, "--backup", str(not_backup)], "not a gpu-wizard backup"),
        (["rollback", *cluster, "--backup", str(damaged)], "damaged.yaml:4: damaged backup"),
        (
            ["apply", *cluster, "--answers", str(answers), "--yes", "--override-helm", "--backup-dir", str(blocked)],
            "nothing was applied",
        ),
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
    from tests.helpers.hostile.cases_answers import CASES

    assert len(CASES) + len(BAD_KUBECONFIGS) + 15 >= 90
