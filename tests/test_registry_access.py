"""Registry access as skopeo, podman and docker do it, against a real docker-registry on loopback.

Credential helpers (``credHelpers``, ``credsStore``) are shell scripts this test writes (the helper
protocol: the server on stdin, JSON on stdout); TLS uses a CA made per session (tests/helpers/tls.py)
for a registry served over https behind htpasswd, and one that requires a client certificate. No
secret may appear in a result, an error, a note or a log line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures.registry import RegistryServer, serve_registry
from tests.helpers.tls import Issued, TestCA
from wizard.cluster.facade import open_registry
from wizard.registry.auth import Credentials
from wizard.registry.client import RegistryClient


@pytest.fixture(scope="module")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def tls_registry(tmp_path_factory: pytest.TempPathFactory, test_ca: TestCA) -> Iterator[RegistryServer]:
    """https with a certificate from the test CA, behind htpasswd."""
    cert = test_ca.issue("registry", server=True)
    yield from serve_registry(
        tmp_path_factory,
        "tls-registry",
        tools=("htpasswd",),
        username=f"user-{secrets.token_hex(3)}",
        password=f"pw-{secrets.token_urlsafe(18)}",
        tls=(cert.cert, cert.key),
        ca=test_ca.pem,
    )


@pytest.fixture(scope="module")
def client_cert(test_ca: TestCA) -> Issued:
    return test_ca.issue("wizard-client", server=False)


@pytest.fixture(scope="module")
def mtls_registry(
    tmp_path_factory: pytest.TempPathFactory, test_ca: TestCA, client_cert: Issued
) -> Iterator[RegistryServer]:
    """https that requires a client certificate issued by the test CA (no password)."""
    cert = test_ca.issue("registry-mtls", server=True)
    yield from serve_registry(
        tmp_path_factory,
        "mtls-registry",
        tls=(cert.cert, cert.key),
        client_ca=test_ca.pem,
        ca=test_ca.pem,
        own_client=(client_cert.cert, client_cert.key),
    )


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every auth file, certs.d root, registries.conf and helper in a temporary folder: the developer's stay out."""
    for var in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR", "CONTAINERS_REGISTRIES_CONF"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("GPU_WIZARD_ETC", str(tmp_path / "etc"))
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def write_helper(tmp_path: Path, name: str, body: str) -> Path:
    """A credential helper script (a test fixture): ``body`` runs with the asked server saved in ``asked-NAME``."""
    script = tmp_path / "bin" / f"docker-credential-{name}"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = get ] || exit 9\nread server\necho "$server" > {tmp_path}/asked-{name}\n{body}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def docker_config(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "docker" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def answer(username: str, secret: str) -> str:
    return "echo '" + json.dumps({"ServerURL": "x", "Username": username, "Secret": secret}) + "'"


def repo_name() -> str:
    return f"mlops/driver-{secrets.token_hex(4)}"


# -- TLS: --registry-ca, certs.d, client certificates ------------------------------------------------


async def test_registry_ca_trusts_a_registry_signed_by_a_private_ca(
    tls_registry: RegistryServer, test_ca: TestCA
) -> None:
    repo = repo_name()
    pushed = tls_registry.push_image(repo, "580")
    ref = f"{tls_registry.host}/{repo}:580"
    creds = {tls_registry.host: Credentials(tls_registry.username, tls_registry.password)}
    async with RegistryClient(credentials=creds) as plain:
        refused = await plain.check(ref)
    assert refused.state == "error" and refused.error.startswith(f"TLS verification failed for {tls_registry.host}")
    async with RegistryClient(credentials=creds, ca_files=[str(test_ca.pem)]) as trusting:
        status = await trusting.check(ref)
        notes = [n.line() for n in trusting.access_notes([tls_registry.host])]
    assert (status.state, status.digest) == ("present", pushed)
    assert f"{tls_registry.host}  tls system CAs and {test_ca.pem}" in notes


async def test_registry_ca_that_is_not_a_certificate_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "not-a-ca.pem"
    bad.write_text("hello\n")
    async with RegistryClient(ca_files=[str(bad)]) as client:  # the front ends show it where results go
        status = await client.check("registry.example.com/x/driver:1")
    assert (
        status.error
        == f"TLS settings for registry.example.com: CA file {bad}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)"
    )


async def test_certs_d_gives_the_ca_and_the_client_certificate(
    mtls_registry: RegistryServer, test_ca: TestCA, client_cert: Issued, isolated: Path
) -> None:
    repo = repo_name()
    pushed = mtls_registry.push_image(repo, "580")
    ref = f"{mtls_registry.host}/{repo}:580"
    async with RegistryClient() as without:
        refused = await without.check(ref)
    assert refused.state == "error"
    # docker's layout under /etc (here $GPU_WIZARD_ETC): ca.crt, client.cert + client.key
    folder = isolated / "etc" / "docker" / "certs.d" / mtls_registry.host
    folder.mkdir(parents=True)
    (folder / "ca.crt").write_bytes(test_ca.pem.read_bytes())
    (folder / "client.cert").write_bytes(client_cert.cert.read_bytes())
    (folder / "client.key").write_bytes(client_cert.key.read_bytes())
    async with RegistryClient() as client:
        status = await client.check(ref)
        notes = [n.line() for n in client.access_notes([mtls_registry.host])]
    assert (status.state, status.digest) == ("present", pushed)
    assert f"{mtls_registry.host}  tls CAs / client certificate (from certs.d {folder})" in notes
    # a client certificate without its key: one line naming the file
    (folder / "client.key").rename(folder / "other.pem")
    async with RegistryClient() as broken:
        failed = await broken.check(ref)
    assert failed.error == (
        f"TLS settings for {mtls_registry.host}: certs.d {folder / 'client.cert'}: "
        "a client certificate without its key client.key"
    )


async def test_user_certs_d_wins_over_the_system_folders(
    mtls_registry: RegistryServer, test_ca: TestCA, client_cert: Issued, isolated: Path
) -> None:
    repo = repo_name()
    mtls_registry.push_image(repo, "1")
    user = isolated / "config" / "containers" / "certs.d" / mtls_registry.host
    user.mkdir(parents=True)
    (user / "ca.crt").write_bytes(test_ca.pem.read_bytes())
    (user / "me.cert").write_bytes(client_cert.cert.read_bytes())
    (user / "me.key").write_bytes(client_cert.key.read_bytes())
    system = isolated / "etc" / "containers" / "certs.d" / mtls_registry.host
    system.mkdir(parents=True)
    (system / "stale.cert").write_text("only a certificate")  # would fail: the user's folder is read instead
    async with RegistryClient() as client:
        assert (await client.check(f"{mtls_registry.host}/{repo}:1")).state == "present"


# -- credential helpers and identity tokens --------------------------------------------------------


async def test_cred_helper_answers_for_its_registry(
    tls_registry: RegistryServer, test_ca: TestCA, isolated: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    repo = repo_name()
    pushed = tls_registry.push_image(repo, "580")
    write_helper(isolated, "testhelper", answer(tls_registry.username, tls_registry.password))
    config = docker_config(isolated, {"auths": {}, "credHelpers": {tls_registry.host: "testhelper"}})
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        before = [n.line() for n in client.access_notes([tls_registry.host])]
        status = await client.check(f"{tls_registry.host}/{repo}:580")
        after = [n.line() for n in client.access_notes([tls_registry.host])]
    assert (status.state, status.digest) == ("present", pushed)
    assert (isolated / "asked-testhelper").read_text().strip() == tls_registry.host
    origin = f"docker-credential-testhelper (credHelpers in {config})"
    assert f"{tls_registry.host}  credentials asked when needed (from {origin})" in before
    assert f"{tls_registry.host}  credentials {tls_registry.username} (from {origin})" in after
    assert tls_registry.password not in repr(status) + repr(after) + caplog.text


async def test_creds_store_serves_the_registries_without_their_own(
    tls_registry: RegistryServer, test_ca: TestCA, isolated: Path
) -> None:
    repo = repo_name()
    tls_registry.push_image(repo, "1")
    ref = f"{tls_registry.host}/{repo}:1"
    write_helper(isolated, "store", answer(tls_registry.username, tls_registry.password))
    config = docker_config(isolated, {"auths": {tls_registry.host: {}}, "credsStore": "store"})
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        assert (await client.check(ref)).state == "present"
    # the store has nothing for the host: no credentials, the registry's refusal as usual
    write_helper(isolated, "store", "echo 'credentials not found in native keychain'; exit 1")
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        denied = await client.check(ref)
    assert denied.error.startswith(f"unauthorized: {tls_registry.host} requires credentials and none were found")
    # a helper that fails, or is missing: one line naming it and where it was named
    write_helper(isolated, "store", f"echo 'boom {tls_registry.password}' >&2; exit 3")
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        failed = await client.check(ref)
    assert failed.error.startswith(
        f"unauthorized: {tls_registry.host}: credential helper docker-credential-store "
        f"(credsStore in {config}) failed (exit 3): boom"
    )
    write_helper(isolated, "store", "printf '%020000d' 0 | tr 0 '['")  # JSON nested past Python's recursion limit
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        deep = await client.check(ref)
    assert deep.error.endswith("(credsStore in " + str(config) + ") answered something that is not JSON")
    write_helper(isolated, "store", "yes '{}'")  # answers without end: cut off, not read into memory
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        endless = await client.check(ref)
    assert endless.error.endswith(f"(credsStore in {config}) answered more than 64 KiB; not credentials")
    docker_config(isolated, {"credsStore": "absent"})
    async with RegistryClient(ca_files=[str(test_ca.pem)]) as client:
        missing = await client.check(ref)
    assert missing.error == (
        f"unauthorized: {tls_registry.host}: credential helper docker-credential-absent "
        f"(credsStore in {config}) is not installed (no docker-credential-absent on PATH)"
    )


def test_helper_names_are_not_paths(isolated: Path) -> None:
    config = docker_config(isolated, {"credHelpers": {"nvcr.io": "../../bin/sh"}})
    with pytest.raises(ValueError, match=r"credHelpers names '\.\./\.\./bin/sh', not a credential helper name"):
        RegistryClient(auth_file=str(config))


async def test_identity_token_from_an_auth_file_and_from_a_helper(
    oci_registry_token: RegistryServer, isolated: Path
) -> None:
    server, tokens = oci_registry_token, oci_registry_token.token_server
    assert tokens is not None
    repo = repo_name()
    pushed = server.push_image(repo, "580")
    ref = f"{server.host}/{repo}:580"
    insecure = [server.host]
    config = docker_config(isolated, {"auths": {server.host: {"identitytoken": tokens.identity_token}}})
    async with RegistryClient(insecure_registries=insecure) as client:
        status = await client.check(ref)
        notes = [n.line() for n in client.access_notes([server.host])]
    assert (status.state, status.digest) == ("present", pushed)
    assert f"{server.host}  credentials <token> (from auth file {config})" in notes
    write_helper(isolated, "idt", answer("<token>", tokens.identity_token))
    docker_config(isolated, {"credHelpers": {server.host: "idt"}})
    async with RegistryClient(insecure_registries=insecure) as client:
        assert (await client.check(ref)).digest == pushed
    wrong = "idt-" + secrets.token_urlsafe(24)
    docker_config(isolated, {"auths": {server.host: {"identitytoken": wrong}}})
    async with RegistryClient(insecure_registries=insecure) as client:
        refused = await client.check(ref)
    assert refused.error.startswith(f"unauthorized: the token service of {server.host} refused the credentials")
    assert wrong not in refused.error and tokens.identity_token not in refused.error


# -- mirrors from registries.conf and containerd hosts.toml ------------------------------------------


async def test_registries_conf_mirror_is_followed_unless_the_user_says_otherwise(
    tls_registry: RegistryServer, test_ca: TestCA, isolated: Path
) -> None:
    pushed = tls_registry.push_image("nvcr/nvidia/driver", "580.126.20-ubuntu22.04")
    docker_config(
        isolated, {"auths": {tls_registry.host: {"username": tls_registry.username, "password": tls_registry.password}}}
    )
    conf = isolated / "config" / "containers" / "registries.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(
        '[[registry]]\nprefix = "nvcr.io"\nlocation = "nvcr.io"\n'
        f'[[registry.mirror]]\nlocation = "{tls_registry.host}/nvcr"\n'
        '[[registry]]\nprefix = "quay.io/some/path"\nlocation = "quay.io"\n'
    )
    ref = "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"
    async with open_registry(None, ["nvcr.io"], ca_files=[str(test_ca.pem)]) as client:
        status = await client.check(ref)
        notes = [n.line() for n in client.access_notes(["nvcr.io"])]
    assert (status.state, status.digest) == ("present", pushed)
    assert f"nvcr.io  mirror -> {tls_registry.host}/nvcr (from registries.conf {conf} (registry #1))" in notes
    assert any("prefix 'quay.io/some/path' skipped: only whole registries" in n for n in notes)
    # the user's own mirror for the host wins; and host_config=False reads nothing of this machine
    async with open_registry(
        None, ["nvcr.io"], mirrors={"nvcr.io": "https://127.0.0.1:9"}, mirror_origins={"nvcr.io": "--registry-mirror"}
    ) as client:
        assert next(n.line() for n in client.access_notes(["nvcr.io"])) == (
            "nvcr.io  mirror -> 127.0.0.1:9 (from --registry-mirror)"
        )
    async with open_registry(None, ["nvcr.io"], host_config=False) as client:
        assert not [n for n in client.access_notes(["nvcr.io"]) if n.kind == "mirror"]


async def test_hosts_toml_mirror_with_its_own_ca(tls_registry: RegistryServer, test_ca: TestCA, isolated: Path) -> None:
    pushed = tls_registry.push_image("library/driver", "570")
    docker_config(
        isolated, {"auths": {tls_registry.host: {"username": tls_registry.username, "password": tls_registry.password}}}
    )
    folder = isolated / "etc" / "containerd" / "certs.d" / "docker.io"
    folder.mkdir(parents=True)
    (folder / "mirror-ca.pem").write_bytes(test_ca.pem.read_bytes())
    (folder / "hosts.toml").write_text(
        'server = "https://registry-1.docker.io"\n'
        f'[host."https://{tls_registry.host}"]\n  capabilities = ["pull", "resolve"]\n  ca = "mirror-ca.pem"\n'
    )
    async with open_registry(None, ["docker.io"]) as client:
        status = await client.check("docker.io/driver:570")
        notes = [n.line() for n in client.access_notes(["docker.io"])]
    assert (status.state, status.digest) == ("present", pushed)
    origin = f"hosts.toml {folder / 'hosts.toml'}"
    assert f"docker.io  mirror -> {tls_registry.host} (from {origin})" in notes
    assert f"{tls_registry.host}  tls CAs / client certificate (from {origin})" in notes


def test_host_config_notes_what_it_skips_and_caps_what_it_reads(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.registry.files import MAX_CONFIG_FILE
    from wizard.registry.hostconfig import read_host_config

    main = isolated / "etc" / "containers" / "registries.conf"
    drop_ins = main.parent / "registries.conf.d"
    drop_ins.mkdir(parents=True)
    main.write_text(
        '[registries.search]\nregistries = ["docker.io"]\n'
        '[[registry]]\nprefix = "ghcr.io"\nlocation = "ghcr.io"\n'
        '[[registry.mirror]]\nlocation = "digest.example.com"\npull-from-mirror = "digest-only"\n'
        '[[registry]]\nlocation = "registry.internal:5000"\ninsecure = true\n'
        '[[registry]]\nprefix = "*.example.com"\nlocation = "x.example.com"\n'
    )
    (drop_ins / "10-broken.conf").write_text("[[registry]\n")
    (drop_ins / "20-big.conf").write_text("#" * (MAX_CONFIG_FILE + 1))
    (drop_ins / "25-deep.conf").write_text("a = " + "[" * 20000 + "]" * 20000 + "\n")
    (drop_ins / "30-mirror.conf").write_text(
        '[[registry]]\nprefix = "nvcr.io"\nlocation = "nvcr.io"\n'
        '[[registry.mirror]]\nlocation = "mirror.example.com/nv"\n'
    )
    hosts = isolated / "etc" / "containerd" / "certs.d"
    (hosts / "nvcr.io").mkdir(parents=True)
    (hosts / "nvcr.io" / "hosts.toml").write_text('[host."https://other.example.com"]\n')
    (hosts / "_default").mkdir()
    (hosts / "_default" / "hosts.toml").write_text('[host."https://all.example.com"]\n')
    (hosts / "quay.io").mkdir()
    (hosts / "quay.io" / "hosts.toml").write_text('[host."https://mirror.example.com/quay"]\n')
    config = read_host_config()
    assert config.mirrors == {"nvcr.io": "https://mirror.example.com/nv"}
    assert config.insecure == {"registry.internal:5000": f"registries.conf {main} (registry #2)"}
    notes = "\n".join(config.notes)
    assert f"registries.conf {main}: version 1 format ([registries.*]); only version 2 is read" in notes
    assert "a digest-only mirror skipped (the image checks ask for tags)" in notes
    assert "prefix '*.example.com' skipped" in notes
    assert f"registries.conf {drop_ins / '10-broken.conf'}: not valid TOML" in notes
    assert f"registries.conf {drop_ins / '20-big.conf'}: larger than 256 KiB; not read" in notes
    assert f"registries.conf {drop_ins / '25-deep.conf'}: nested too deeply to be a registry configuration" in notes
    assert "nvcr.io already mirrored by registries.conf" in notes
    assert "the _default entry is not followed" in notes
    assert "https://mirror.example.com/quay skipped: a mirror under a path is not followed" in notes
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(isolated / "absent.conf"))
    assert "cannot be read" in read_host_config().notes[0]


# -- the command line -----------------------------------------------------------------------------


def test_cli_reaches_a_private_registry_with_its_ca_and_a_helper_and_shows_no_secret(
    tls_registry: RegistryServer,
    test_ca: TestCA,
    demo_cluster: Any,
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.helpers.cluster import SLE_TAG
    from wizard.cli.main import main

    monkeypatch.setenv("XDG_STATE_HOME", str(isolated / "state"))
    tls_registry.push_image("mlops/nvidia-driver", SLE_TAG)
    write_helper(isolated, "testhelper", answer(tls_registry.username, tls_registry.password))
    config = docker_config(isolated, {"credHelpers": {tls_registry.host: "testhelper"}})
    answers = isolated / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\n"
        f"driver: {{version: '580.126.09.1', repository: {tls_registry.host}/mlops}}\n"
        "toolkit: {installDir: /run/nvidia/toolkit-install}\n"
    )
    demo = demo_cluster("sle-micro-precompiled")
    argv = ["doctor", "--kubeconfig", str(demo.kubeconfig_path), "--answers", str(answers), "-o", "json"]

    def image_findings(*extra: str) -> tuple[list[str], str]:
        verbose = ["-v"] if "-v" in extra else []
        main([*verbose, *argv, *(e for e in extra if e != "-v")])
        out, err = capsys.readouterr()
        data = json.loads(out)
        return [f"{f['status']}: {f['message']}" for f in data["findings"] if f["check"] == "driver-image"], err

    unchecked, _ = image_findings()
    assert len(unchecked) == 1 and "TLS verification failed for" in unchecked[0]
    checked, err = image_findings("-v", "--registry-ca", str(test_ca.pem))
    assert checked == [], checked  # present: no finding
    origin = f"docker-credential-testhelper (credHelpers in {config})"
    assert f"registry: {tls_registry.host}  credentials asked when needed (from {origin})" in err
    assert re.search(rf"registry HEAD https://{tls_registry.host}/v2/mlops/nvidia-driver/manifests/\S+ 200 ", err)
    # the answers file's driver.registryCA does the same; --no-host-registry-config leaves the helper unrun
    answers.write_text(answers.read_text().replace("/mlops}", f"/mlops, registryCA: {test_ca.pem}}}"))
    assert image_findings()[0] == []
    denied, _ = image_findings("--no-host-registry-config")
    assert len(denied) == 1 and "requires credentials and none were found" in denied[0]
    # a CA flag that names no certificate ends the command before any registry request, in one line
    assert main([*argv, "--registry-ca", str(answers)]) == 2
    assert capsys.readouterr().err.endswith(
        f"\ngpu-wizard: error: CA file {answers}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)\n"
    )
    everything = err + "".join(p.read_text() for p in (isolated / "state").rglob("*.log"))
    assert tls_registry.password not in everything


def test_answers_fields_for_registry_access_validate_and_stay_out_of_short_files() -> None:
    from wizard.engine.plan import Plan

    base = {"version": 1, "mode": "precompiled", "driver": {"version": "580", "repository": "registry.example.com/ml"}}
    plain = Plan.model_validate(base)
    assert (plain.driver.registryCA, plain.driver.hostRegistryConfig) == ("", True)
    assert (
        "registryCA" not in plain.answers_dict()["driver"]
        and "hostRegistryConfig" not in plain.answers_dict()["driver"]
    )
    chosen = Plan.model_validate(
        {**base, "driver": {**base["driver"], "registryCA": "/etc/pki/corp-ca.pem", "hostRegistryConfig": False}}
    )
    kept = chosen.answers_dict()["driver"]
    assert (kept["registryCA"], kept["hostRegistryConfig"]) == ("/etc/pki/corp-ca.pem", False)
    assert Plan.model_validate({**base, "driver": kept}).driver == chosen.driver  # a saved file reads back the same
    with pytest.raises(ValueError, match="is not a file path: one printable line"):
        Plan.model_validate({**base, "driver": {**base["driver"], "registryCA": "/etc/ca.pem\n/etc/other"}})


async def test_mirror_run_trusts_the_registry_ca_for_skopeo(
    oci_registry: RegistryServer, tls_registry: RegistryServer, test_ca: TestCA, skopeo_tool: str
) -> None:
    from tests.helpers.mirror import Item
    from wizard.registry.mirror_run import run_mirror

    name = f"580-{secrets.token_hex(3)}"
    digest = oci_registry.push_image("nvidia/driver", name)
    source, target = f"{oci_registry.host}/nvidia/driver:{name}", f"{tls_registry.host}/mlops/nvidia-driver:{name}"

    creds = Credentials(tls_registry.username, tls_registry.password)
    common: dict[str, Any] = {"skopeo": skopeo_tool, "dest_creds": creds, "insecure_registries": [oci_registry.host]}
    (refused,) = await run_mirror([Item(source, target)], **common)
    assert not refused.ok and "certificate" in refused.error
    (copied,) = await run_mirror([Item(source, target)], ca_files=[str(test_ca.pem)], **common)
    assert copied.ok and copied.digest == digest, copied.error
    assert tls_registry.password not in refused.error
    # the copied tag is what the image checks then find
    async with RegistryClient(credentials={tls_registry.host: creds}, ca_files=[str(test_ca.pem)]) as client:
        assert (await client.check(target)).digest == digest


def test_an_auth_file_nested_too_deeply_is_one_line(isolated: Path) -> None:
    config = isolated / "deep.json"
    config.write_text("[" * 20000 + "]" * 20000)
    with pytest.raises(ValueError, match=rf"^auth file {config}: nested deeper than 16 levels"):
        RegistryClient(auth_file=str(config))
