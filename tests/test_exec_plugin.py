"""Exec credential plugins (EKS, GKE, AKS kubeconfigs) against the demo cluster, as kubectl runs them.

The plugins are small Python scripts this test writes (nothing gpu-wizard generated is executed):
one records the ``KUBERNETES_EXEC_INFO`` it got and prints an ExecCredential with the demo's
token; one fails with coloured, multi-line error output; one does not exist. The client connects
over real HTTPS to the demo cluster.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main
from wizard.cluster.access.kubeconfig import exec_cluster_info, one_line
from wizard.cluster.facade import Cluster


def plugin(path: Path, body: str) -> Path:
    """An executable Python script (the test's own plugin)."""
    path.write_text(f"#!{sys.executable}\nimport json, os, sys\n{body}\n")
    path.chmod(0o755)
    return path


def exec_kubeconfig(path: Path, server: str, ca: Path, exec_block: str) -> Path:
    """A kubeconfig whose user runs ``exec_block`` (YAML, indented under ``exec:``)."""
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: eks\n"
        f"clusters:\n- name: eks-cluster\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\n"
        "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
        "      extension:\n        audience: gpu-wizard-test\n        region: eu-west-1\n"
        "contexts:\n- name: eks\n  context:\n    cluster: eks-cluster\n    user: eks-user\n"
        f"users:\n- name: eks-user\n  user:\n    exec:\n{exec_block}"
    )
    return path


async def test_provide_cluster_info_reaches_the_plugin(
    demo_cluster: ClusterFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = demo_cluster("preinstalled")
    assert demo.ca_path is not None
    seen = tmp_path / "exec-info.json"
    (tmp_path / "bin").mkdir()
    monkeypatch.chdir(tmp_path / "bin")  # a relative command is relative to the kubeconfig, not the current folder
    plugin(
        tmp_path / "bin" / "token-plugin",
        f"open({str(seen)!r}, 'w').write(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert sys.argv[1:] == ['token', '--cluster', 'demo'] and os.environ['PLUGIN_MODE'] == 'test'\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        f" 'status': {{'token': {demo.token!r}}}}}))",
    )
    block = (
        "      apiVersion: client.authentication.k8s.io/v1\n"
        "      command: bin/token-plugin\n      args: [token, --cluster, demo]\n"
        "      env: [{name: PLUGIN_MODE, value: test}]\n"
        "      interactiveMode: Never\n      provideClusterInfo: true\n"
    )
    config = exec_kubeconfig(tmp_path / "kubeconfig", demo.url, demo.ca_path, block)
    cluster = await Cluster.connect(kubeconfig=str(config))
    try:
        assert cluster.info.context == "eks" and (await cluster.discover()).gpu_nodes
    finally:
        await cluster.close()
    info = json.loads(seen.read_text())
    assert info["apiVersion"] == "client.authentication.k8s.io/v1" and info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {
        "server": demo.url,
        "certificate-authority-data": base64.b64encode(demo.ca_path.read_bytes()).decode(),
        "config": {"audience": "gpu-wizard-test", "region": "eu-west-1"},
    }


def test_exec_cluster_info_carries_tls_and_proxy_settings() -> None:
    cluster = {
        "server": "https://10.0.0.1:6443",
        "certificate-authority-data": "Q0EK",
        "tls-server-name": "api.internal",
        "insecure-skip-tls-verify": True,
        "proxy-url": "socks5://proxy:1080",
        "extensions": [
            {"name": "other", "extension": {}},
            {"name": "client.authentication.k8s.io/exec", "extension": 7},
        ],
    }
    assert exec_cluster_info(cluster) == {
        "server": "https://10.0.0.1:6443",
        "tls-server-name": "api.internal",
        "insecure-skip-tls-verify": True,
        "certificate-authority-data": "Q0EK",
        "proxy-url": "socks5://proxy:1080",
        "config": 7,
    }


def test_a_failing_plugin_is_one_line_of_its_own_text_not_a_401(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("preinstalled")
    assert demo.ca_path is not None
    script = plugin(
        tmp_path / "aws-iam-authenticator",
        "sys.stderr.write('error: \\x1b[31mSSO session expired\\x1b[0m\\r\\n  run: aws sso login\\n'); sys.exit(3)",
    )
    block = f"      apiVersion: client.authentication.k8s.io/v1beta1\n      command: {script}\n"
    config = exec_kubeconfig(tmp_path / "kubeconfig", demo.url, demo.ca_path, block)
    code = main(["discover", "--kubeconfig", str(config)])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.splitlines()[0] == (
        f"gpu-wizard: error: exec plugin {script} failed (exit code 3): error: SSO session expired run: aws sso login"
    )
    assert "rejected the credentials" not in err and "b'" not in err and "\x1b" not in err and "\r" not in err


def test_a_missing_plugin_shows_its_install_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = (
        "      apiVersion: client.authentication.k8s.io/v1\n      command: gke-gcloud-auth-plugin-not-here\n"
        "      interactiveMode: IfAvailable\n"
        '      installHint: "Install gke-gcloud-auth-plugin:\\n\\e[1m gcloud components install\\e[0m"\n'
    )
    config = exec_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", tmp_path / "ca.pem", block)
    (tmp_path / "ca.pem").write_text("not used: the plugin is missing before any connection\n")
    code = main(["discover", "--kubeconfig", str(config)])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.splitlines() == [
        "gpu-wizard: error: exec plugin gke-gcloud-auth-plugin-not-here not found",
        "  hint: Install gke-gcloud-auth-plugin: gcloud components install",
    ]


def test_interactive_mode_always_needs_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = plugin(tmp_path / "login", "sys.exit(0)")
    block = (
        f"      apiVersion: client.authentication.k8s.io/v1\n      command: {script}\n      interactiveMode: Always\n"
    )
    (tmp_path / "ca.pem").write_text("unused\n")
    config = exec_kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:1", tmp_path / "ca.pem", block)
    code = main(["discover", "--kubeconfig", str(config)])
    _, err = capsys.readouterr()
    assert code == 2 and "needs a terminal (interactiveMode: Always)" in err.splitlines()[0]


def test_one_line_drops_escapes_and_control_characters() -> None:
    assert one_line("a\x1b[2K\rb\x00c\x9b\x7f\n\td") == "a b c d"
    assert one_line(b"ok \xff") == "ok \ufffd"  # undecodable bytes are shown, not a bytes literal
    assert one_line("x" * 400, 10) == "x" * 9 + "…"
