"""The request log: ``-v`` and ``GPU_WIZARD_LOG=FILE`` write one line per API and registry request, secrets redacted,
and the support bundle carries the last run's log."""

from __future__ import annotations

import base64
import json
import re
import stat
import tarfile
from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.registry import RegistryServer
from wizard import requestlog
from wizard.cli.main import main

LINE = re.compile(
    r"^\d\d:\d\d:\d\d\.\d{3} (api|registry) (GET|HEAD|POST|PATCH|PUT|DELETE|WATCH) \S+ \S+ \d+ms retries=\d+$"
)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("GPU_WIZARD_ETC", str(tmp_path / "etc"))
    for var in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR", "CONTAINERS_REGISTRIES_CONF", requestlog.ENV):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_secrets_in_a_url_are_redacted() -> None:
    url = "https://admin:hunter2@auth.example.com/token?scope=repository:a:pull&access_token=abc&X-Amz-Signature=f00"
    assert requestlog.redact_url(url) == (
        "https://auth.example.com/token?scope=repository:a:pull&access_token=***&X-Amz-Signature=***"
    )


def test_verbose_writes_each_api_request_to_stderr(
    demo_cluster: ClusterFactory, capsys: pytest.CaptureFixture[str], isolated: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    code = main(["-v", "discover", "--kubeconfig", str(demo.kubeconfig_path)])
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if " api " in line]
    server = r"https://127\.0\.0\.1:\d+"
    assert any(re.search(rf" api GET {server}/api/v1/nodes\S* 200 \d+ms retries=0$", line) for line in lines), err
    assert all(LINE.match(line) for line in lines), lines
    # the same run kept its lines for the support bundle; a run without requests leaves them alone
    kept = isolated / "state" / "gpu-wizard" / "logs"
    assert (kept / "last-run.log").read_text().splitlines() == lines
    assert stat.S_IMODE((kept / "last-run.log").stat().st_mode) == 0o600
    assert main(["answers", "init"]) == 0
    assert (kept / "last-run.log").read_text().splitlines() == lines
    # without -v nothing goes to stderr
    capsys.readouterr()
    assert main(["discover", "--kubeconfig", str(demo.kubeconfig_path)]) == 0
    assert " api " not in capsys.readouterr().err


def test_log_file_holds_registry_requests_and_no_secret(
    oci_registry_auth: RegistryServer,
    demo_cluster: ClusterFactory,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = oci_registry_auth
    repo = "mlops/nvidia-driver"
    demo = demo_cluster("sle-micro-precompiled")
    auth = isolated / "auth.json"
    token = base64.b64encode(f"{server.username}:{server.password}".encode()).decode()
    auth.write_text(json.dumps({"auths": {server.host: {"auth": token}}}))
    answers = isolated / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\n"
        f"driver: {{version: '580.126.09.1', repository: {server.host}/{repo}, source: {server.host}/src}}\n"
        "toolkit: {installDir: /run/nvidia/toolkit-install}\n"
    )
    log = isolated / "requests.log"
    monkeypatch.setenv(requestlog.ENV, str(log))
    code = main(
        [
            "doctor",
            "--kubeconfig",
            str(demo.kubeconfig_path),
            "--answers",
            str(answers),
            "--registry-auth-file",
            str(auth),
            "--insecure-registry",
            server.host,
        ]
    )
    err = capsys.readouterr().err
    assert code in (0, 1), err
    text = log.read_text()
    assert re.search(rf" registry HEAD https?://{server.host}/v2/{repo}/nvidia-driver/manifests/\S+ \d+ \d+ms", text), (
        text
    )
    assert " api GET " in text
    assert server.password not in text and token not in text and "Authorization" not in text
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


def test_support_bundle_carries_the_last_runs_log(
    demo_cluster: ClusterFactory, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    assert main(["discover", *kube]) == 0
    discovered = (isolated / "state" / "gpu-wizard" / "logs" / "last-run.log").read_text()
    target = isolated / "bundle.tar.gz"
    assert main(["support-bundle", *kube, "-o", str(target)]) == 0, capsys.readouterr().err
    with tarfile.open(target) as tar:
        member = tar.extractfile("gpu-wizard-support/gpu-wizard/last-run.log")
        assert member is not None
        assert member.read().decode() == discovered
    assert "/api/v1/nodes" in discovered


def test_verbose_in_the_interactive_wizard_writes_a_file_of_its_own(
    demo_cluster: ClusterFactory, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TUI owns the terminal: ``gpu-wizard -v`` (no command) logs to a file in the logs folder instead of stderr."""
    import asyncio

    from tests.helpers.cluster import connected
    from wizard.cli.main import build_parser
    from wizard.launch import starts_the_tui, tui_request_log

    def tui_arguments(words: list[str]) -> object:  # as the TUI parses them (its terminal check aside)
        return build_parser(commands=False).parse_args(words)

    demo = demo_cluster("sle-micro-precompiled")
    words = ["-v", "--kubeconfig", str(demo.kubeconfig_path)]
    assert starts_the_tui(words)
    log_file = tui_request_log(tui_arguments(words))
    assert log_file is not None and Path(log_file).parent == isolated / "state" / "gpu-wizard" / "logs"

    async def discover() -> None:
        async with connected(demo) as cluster:
            await cluster.discover()

    try:
        asyncio.run(discover())
    finally:
        requestlog.close()
    lines = Path(log_file).read_text().splitlines()
    assert any(re.search(r" api GET https://127\.0\.0\.1:\d+/api/v1/nodes\S* 200 \d+ms retries=0$", x) for x in lines)
    assert all(LINE.match(line) for line in lines), lines
    # GPU_WIZARD_LOG names the file itself; without -v only the support bundle's copy is kept
    monkeypatch.setenv(requestlog.ENV, str(isolated / "mine.log"))
    assert tui_request_log(tui_arguments(words)) is None
    requestlog.close()
    monkeypatch.delenv(requestlog.ENV)
    assert tui_request_log(tui_arguments(["--kubeconfig", str(demo.kubeconfig_path)])) is None
    requestlog.close()
