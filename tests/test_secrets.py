"""No secret in any artefact: full runs with registry credentials, then every file written and every line printed is searched.

The registry is a real docker-registry behind htpasswd (fresh user and password per run); the
cluster is the demo cluster, whose bearer token is the kube credential. Searched for: the password,
``user:password``, its base64 form (what Basic auth and auth files carry), a wrong password that was
tried, and the bearer token. Not searched: the files the user handed in (auth files, the kubeconfig).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from screens.app import WizardApp
from tests.helpers.cluster import SLE_TAG, kubeconfig, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.pull_secret import PULL_SECRET, add_pull_secret
from tests.helpers.tui import apply_and_roll_out, connected, next_to, set_field, verified
from tests.snapshots.plugin import screen_text, wait_for
from wizard.bundled import asset_text
from wizard.cli.main import main


def secrets_of(registry: RegistryServer, *extra: str) -> dict[str, str]:
    """What must never appear: the password in its every form, and the extra secrets given."""
    user_pass = f"{registry.username}:{registry.password}"
    found = {
        "registry password": registry.password,
        "user:password": user_pass,
        "base64(user:password)": base64.b64encode(user_pass.encode()).decode(),
    }
    for index, secret in enumerate(extra):
        found[f"secret #{index + 1}"] = secret
    return found


def leaks(secrets: dict[str, str], roots: Iterable[Path], texts: Iterable[str], given: Path) -> list[str]:
    """Where any secret shows up: files under ``roots`` (except under ``given``) and the printed ``texts``."""
    found: list[str] = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            if given in path.parents:
                continue
            data = path.read_bytes()
            found += [f"{path}: {name}" for name, value in secrets.items() if value.encode() in data]
    for index, text in enumerate(texts):
        found += [f"output #{index}: {name}" for name, value in secrets.items() if value in text]
    return found


def auth_file(path: Path, host: str, username: str, password: str) -> Path:
    """An auth.json (containers-auth.json(5)) as skopeo login writes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    path.write_text(json.dumps({"auths": {host: {"auth": token}}}))
    return path


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and the working folder under tmp_path, so every file the wizard writes lands where it is searched."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "REGISTRY_AUTH_FILE", "DOCKER_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(work)
    return work


def test_cli_run_with_credentials_leaks_nothing(
    demo_cluster: ClusterFactory,
    oci_registry_auth: RegistryServer,
    private_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    registry = oci_registry_auth
    host, user = registry.host, registry.username
    skopeo = shutil.which("skopeo")
    digest = registry.push_image("upstream/nvidia-driver", SLE_TAG, content=b"secrets test")
    if not skopeo:
        registry.push_image("mlops/nvidia-driver", SLE_TAG, content=b"secrets test")
    world = scenario("sle-micro-precompiled")
    world.registry = dataclasses.replace(world.registry, url=registry.url)
    demo = demo_cluster(world)
    add_pull_secret(demo.store, host, user, registry.password)
    given = tmp_path / "given"
    good = auth_file(given / "auth.json", host, user, registry.password)
    wrong_password = "wrong-" + registry.password[::-1]
    wrong = auth_file(given / "wrong.json", host, user, wrong_password)
    answers = private_home / "answers.yaml"
    answers.write_text(
        f"version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: {host}/mlops\n"
        f"  source: {host}/upstream\n  imagePullSecrets: [{PULL_SECRET}]\n"
        "toolkit:\n  installDir: /run/nvidia/toolkit-install\n"
    )
    cluster = ["--kubeconfig", str(demo.kubeconfig_path)]
    creds = ["--registry-auth-file", str(good), "--insecure-registry", host]
    printed: list[str] = []

    def run(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        printed.append(out + err)
        return code, out + err

    assert run("render", "--answers", str(answers), *cluster)[0] == 0
    if skopeo:
        code, text = run("mirror", "--answers", str(answers), *cluster, "--run", *creds)
        assert code == 0 and "mirrored 1 of 1 images" in text, text
    backups = private_home / "backups"
    code, text = run("apply", "--answers", str(answers), *cluster, *creds, "--yes", "--backup-dir", str(backups))
    assert code == 0, text
    code, text = run("verify", "--answers", str(answers), *cluster, *creds, "-o", "json")
    (private_home / "report.json").write_text(text.split("\n", 1)[1])  # a report the user keeps
    assert code == 0 and f"{digest} matches the registry" in text, text
    assert f"gpu-wizard: warning: TLS verification is off for {host}" in text  # --insecure-registry is said
    code, text = run(
        "verify", "--answers", str(answers), *cluster, "--registry-auth-file", str(wrong), "--insecure-registry", host
    )
    assert f"for user {user}" in text and "unauthorized" in text  # the wrong password was tried, and named by its user
    wrong_token = "kube-token-" + registry.password[::-1]
    stale = kubeconfig(given / "stale-kubeconfig", demo.url, token=wrong_token, ca=demo.ca_path)
    code, text = run("discover", "--kubeconfig", str(stale))
    assert code == 2 and "rejected the credentials" in text
    (backup,) = backups.iterdir()
    assert run("rollback", "--backup", str(backup), *cluster)[0] == 0

    secrets = secrets_of(registry, demo.token, wrong_password, wrong_token)
    assert leaks(secrets, [tmp_path], printed, given) == []
    assert (private_home / "backups").is_dir() and len(printed) >= 6


async def test_tui_walk_with_credentials_in_the_environment_leaks_nothing(
    tui_env: Path, oci_registry_auth: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = oci_registry_auth
    host, user = registry.host, registry.username
    digest = registry.push_image("mlops/nvidia-driver", SLE_TAG, content=b"tui secrets test")
    given = tmp_path / "given"
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(auth_file(given / "auth.json", host, user, registry.password)))
    world = asset_text("scenarios", "sle-micro-precompiled.yaml").replace(
        "\nregistry:\n", f"\nregistry:\n  url: {registry.url}\n"
    )
    (given / "scenario.yaml").write_text(world)
    app = WizardApp(demo=str(given / "scenario.yaml"), step_delay=0.0, report_dir=tui_env)
    shown: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await connected(pilot)
        add_pull_secret(app._demo_cluster.store, host, user, registry.password)
        for step in ("nodes", "mode", "driver"):
            await next_to(pilot, step)
        await set_field(pilot, "driver-imagePullSecrets", PULL_SECRET)
        await set_field(pilot, "driver-repository", f"{host}/mlops")
        assert app.state.get("driver.imagePullSecrets") == [PULL_SECRET]
        await wait_for(pilot, lambda: bool(app.state.images) and app.state.images[0].target.digest, 30, "image check")
        assert app.state.images[0].target.digest == digest  # the registry was asked with the credentials
        shown.append(screen_text(app))
        for step in ("paths", "preview"):
            await next_to(pilot, step)
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot, expect_warning=None)
        shown.append(await verified(pilot))
        await pilot.click("#export")
        await pilot.press("enter")
        await wait_for(pilot, lambda: (tui_env / "gpu-wizard-report.json").exists(), what="the report")
        app.save_screenshot("walk.svg", str(tui_env))
        token = app._demo_cluster.token
    assert leaks(secrets_of(registry, token), [tmp_path], shown, given) == []
    written = {p.name for p in tui_env.rglob("*") if p.is_file()}
    assert {"answers.yaml", "gpu-wizard-report.json", "gpu-wizard-report.md", "walk.svg"} <= written
    assert any(name.startswith("backup-") for name in written)
