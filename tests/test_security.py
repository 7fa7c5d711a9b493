"""Security: no shell anywhere, private files, TLS verified unless the user says otherwise, a locked-down demo server.

The no-secret-in-any-artefact runs (CLI and TUI with registry credentials) are in ``test_secrets.py``.
"""

from __future__ import annotations

import ast
import ipaddress
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from screens.app import WizardApp
from tests.helpers.cluster import kubeconfig
from tests.helpers.fixtures.demo import ClusterFactory
from tests.snapshots.plugin import wait_for
from wizard.cli.main import main
from wizard.registry.client import RegistryClient

ROOT = Path(__file__).resolve().parent.parent
SHELL_CALLS = {
    ("os", "system"),
    ("os", "popen"),
    ("subprocess", "getoutput"),
    ("subprocess", "getstatusoutput"),
    ("asyncio", "create_subprocess_shell"),
}


def _source_files() -> list[Path]:
    return sorted(p for folder in ("wizard", "screens") for p in (ROOT / folder).rglob("*.py"))


def test_no_subprocess_ever_goes_through_a_shell() -> None:
    offences: list[str] = []
    for path in _source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            for keyword in node.keywords:
                if keyword.arg == "shell" and not (
                    isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                ):
                    offences.append(f"{where}: shell={ast.unparse(keyword.value)}")
            func = node.func
            owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (owner, name) in SHELL_CALLS or name == "create_subprocess_shell":
                offences.append(f"{where}: {owner}.{name}")
        for node in ast.walk(tree):  # `from os import system` would hide the call's owner
            if isinstance(node, ast.ImportFrom) and any((node.module, a.name) in SHELL_CALLS for a in node.names):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import …")
    assert offences == []
    assert len(_source_files()) > 50  # the scan saw the code base


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_crash_log_is_private(tmp_path: Path) -> None:
    old = tmp_path / ".local" / "state" / "gpu-wizard" / "crash.log"
    old.parent.mkdir(parents=True)
    old.write_text("an older crash\n")
    old.chmod(0o644)  # a log left by an older version: replaced, not reused with its mode
    code = (
        "import screens.steps.paths as m\n"
        "m.PathsStep.on_mount = lambda self: 1 / 0\n"
        "from screens.app import WizardApp\n"
        "app = WizardApp(start_step='paths')\n"
        "app.run(headless=True)\n"
    )
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("XDG_")}, "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, env=env, cwd=ROOT, check=False)
    assert "ZeroDivisionError" in old.read_text()
    assert _mode(old) == 0o600


def test_answers_init_writes_a_private_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "answers.yaml"
    assert main(["answers", "init", "-o", str(target)]) == 0
    assert _mode(target) == 0o600


# -- TLS -----------------------------------------------------------------------------------------------


def test_cluster_tls_is_verified_unless_the_kubeconfig_says_insecure(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    no_ca = kubeconfig(tmp_path / "no-ca", demo.url, token=demo.token)
    assert main(["discover", "--kubeconfig", str(no_ca)]) == 2
    err = capsys.readouterr().err
    assert f"TLS verification of {demo.url} failed" in err and "certificate-authority" in err
    assert "Traceback" not in err

    insecure = no_ca.read_text().replace(
        f"server: {demo.url}\n", f"server: {demo.url}\n    insecure-skip-tls-verify: true\n"
    )
    (tmp_path / "insecure").write_text(insecure)
    assert main(["discover", "--kubeconfig", str(tmp_path / "insecure")]) == 0
    err = capsys.readouterr().err
    assert "warning: TLS verification is off" in err and "insecure-skip-tls-verify" in err


async def test_tui_warns_when_the_kubeconfig_turns_tls_verification_off(
    demo_cluster: ClusterFactory, tui_env: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    path = kubeconfig(tui_env / "kubeconfig", demo.url, token=demo.token)
    path.write_text(
        path.read_text().replace(f"server: {demo.url}\n", f"server: {demo.url}\n    insecure-skip-tls-verify: true\n")
    )
    app = WizardApp(kubeconfig=str(path), report_dir=tui_env)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None, 30, "the connection")
        warnings = [n for n in app._notifications if n.title == "Insecure connection"]
        assert warnings and "TLS verification is off for context test" in warnings[0].message


async def test_registry_tls_is_verified_unless_listed_insecure(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    options = demo.registry_options()
    trusted = {key: options.pop(key) for key in ("ca_file", "ca_data") if key in options}
    assert trusted  # the demo registry speaks https with its own CA, which the client must be given
    endpoint = f"127.0.0.1:{demo.url.rsplit(':', 1)[1]}"
    reference = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
    async with RegistryClient(**options) as registry:
        refused = await registry.check(reference)
        assert registry.warnings == []
    assert refused.state == "error" and f"TLS verification failed for {endpoint}" in refused.error
    assert "insecure registry only if you trust it" in refused.error
    async with RegistryClient(insecure_registries=[endpoint], **options) as registry:
        found = await registry.check(reference)
        assert registry.warnings == [
            f"TLS verification is off for {endpoint}: its identity is not checked (listed as insecure)"
        ]
    assert found.state == "present"


# -- the demo server -----------------------------------------------------------------------------------


def _outside_address() -> str | None:
    """An address of this machine that is not loopback (None when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
            address = str(probe.getsockname()[0])
        except OSError:
            return None
    return None if ipaddress.ip_address(address).is_loopback else address


async def test_demo_server_answers_only_loopback_and_its_token(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    url = f"{demo.url}/api/v1/nodes"
    good = {"Authorization": f"Bearer {demo.token}"}
    async with aiohttp.ClientSession() as session:

        async def status(headers: dict[str, str]) -> int:
            async with session.get(url, headers=headers, ssl=demo.ssl_context()) as resp:
                return resp.status

        assert await status({}) == 401
        assert await status({"Authorization": "Bearer not-the-token"}) == 401
        assert await status({"Authorization": f"Basic {demo.token}"}) == 401
        assert await status({**good, "Host": "attacker.example:443"}) == 403  # DNS rebinding
        assert await status(good) == 200
    assert demo.url.startswith("https://127.0.0.1:")
    outside = _outside_address()
    if outside is not None:  # the port is not open on the machine's other addresses
        port = int(demo.url.rsplit(":", 1)[1])
        with socket.socket() as sock, pytest.raises(OSError):
            sock.settimeout(2)
            sock.connect((outside, port))
