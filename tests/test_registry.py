"""The registry check against a real docker-registry on loopback: tags, digests, auth, failures, secrecy."""

from __future__ import annotations

import json
import logging
import re
import secrets
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.helpers.fixtures.registry import RegistryServer, free_port, require_tools
from wizard import requestlog
from wizard.engine.naming import split_reference
from wizard.registry.auth import Credentials, load_auth_file
from wizard.registry.client import RegistryClient, RegistryError, TagStatus


def repo_name(prefix: str = "mlops/nvidia-driver") -> str:
    """A repository no other test touches (the registry is shared by the session)."""
    return f"{prefix}-{secrets.token_hex(4)}"


@pytest.fixture(autouse=True)
def isolated_auth_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every auth-file location at an empty temporary folder: the developer's logins stay out."""
    for var in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    return tmp_path


def client_for(server: RegistryServer, **kwargs: Any) -> RegistryClient:
    """A client that trusts the plain-http loopback registry."""
    return RegistryClient(insecure_registries=[server.host], **kwargs)


# -- tags and digests -------------------------------------------------------------------------------


async def test_present_tag_reports_the_pushed_digest(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    tag = "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
    pushed = oci_registry.push_image(repo, tag, content=b"580")
    async with client_for(oci_registry) as client:
        status = await client.check(f"{oci_registry.host}/{repo}:{tag}")
    assert status == TagStatus(
        f"{oci_registry.host}/{repo}:{tag}", True, pushed, "application/vnd.oci.image.manifest.v1+json"
    )
    assert status.state == "present"


async def test_missing_tag_is_missing_not_an_error(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    oci_registry.push_image(repo, "580-other-kernel")
    async with client_for(oci_registry) as client:
        status = await client.check(f"{oci_registry.host}/{repo}:580-5.14.21-150500.55.166-default-sle-micro5.5")
        no_repo = await client.check(f"{oci_registry.host}/{repo_name('nowhere')}:580")
    assert (status.exists, status.error, status.state) == (False, "", "missing")
    assert no_repo.state == "missing"


async def test_repushed_tag_has_a_new_digest(oci_registry: RegistryServer) -> None:
    """The digest-mismatch scenario: the mirror's tag was overwritten after the plan recorded it."""
    repo, tag = repo_name(), "570.172.08.1-5.14.21-150500.55.166-default-sle-micro5.5"
    first = oci_registry.push_image(repo, tag, content=b"build 1")
    async with client_for(oci_registry) as client:
        before = await client.check(f"{oci_registry.host}/{repo}:{tag}")
        second = oci_registry.push_image(repo, tag, content=b"build 2")
        after = await client.check(f"{oci_registry.host}/{repo}:{tag}")
    assert before.digest == first and after.digest == second and first != second


async def test_digest_reference_and_index(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    index = oci_registry.push_index(repo, "580-multiarch")
    async with client_for(oci_registry) as client:
        by_tag = await client.check(f"{oci_registry.host}/{repo}:580-multiarch")
        by_digest = await client.check(f"{oci_registry.host}/{repo}@{index}")
    assert by_tag.digest == by_digest.digest == index
    assert by_tag.media_type == "application/vnd.oci.image.index.v1+json"


async def test_deleted_tag_disappears_and_list_tags(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    for n in range(3):
        oci_registry.push_image(repo, f"t{n}", content=f"{n}".encode())
    async with client_for(oci_registry) as client:
        assert sorted(await client.list_tags(f"{oci_registry.host}/{repo}")) == ["t0", "t1", "t2"]
        oci_registry.delete_tag(repo, "t1")
        assert (await client.check(f"{oci_registry.host}/{repo}:t1")).state == "missing"
        assert await client.list_tags(f"{oci_registry.host}/{repo_name('absent')}") == []
        assert len(await client.list_tags(f"{oci_registry.host}/{repo}", limit=1)) == 1  # bounded: stops there


async def test_check_many_is_concurrent_and_keeps_order(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    digests = {f"t{n}": oci_registry.push_image(repo, f"t{n}", content=f"c{n}".encode()) for n in range(20)}
    refs = [f"{oci_registry.host}/{repo}:t{n}" for n in range(20)] + [f"{oci_registry.host}/{repo}:nope"]
    async with client_for(oci_registry, concurrency=8) as client:
        started = time.perf_counter()
        result = await client.check_many([*refs, refs[0]])  # duplicates are asked once
        elapsed = time.perf_counter() - started
    assert list(result) == refs
    assert all(result[f"{oci_registry.host}/{repo}:{t}"].digest == d for t, d in digests.items())
    assert result[refs[-1]].state == "missing"
    assert elapsed < 3, f"21 HEADs took {elapsed:.2f} s"


async def test_invalid_reference_is_an_error_status(oci_registry: RegistryServer) -> None:
    async with client_for(oci_registry) as client:
        status = await client.check(f"{oci_registry.host}/MLOps/Driver:580")
    assert status.state == "error" and "repository path" in status.error


# -- TLS and reachability ---------------------------------------------------------------------------


async def test_tls_is_verified_unless_the_registry_is_listed_insecure(oci_registry: RegistryServer) -> None:
    repo = repo_name()
    oci_registry.push_image(repo, "580")
    ref = f"{oci_registry.host}/{repo}:580"
    async with RegistryClient() as strict:
        refused = await strict.check(ref)
        assert strict.warnings == []
    assert refused.state == "error" and "TLS" in refused.error and "insecure" in refused.error
    async with client_for(oci_registry) as lax:
        assert (await lax.check(ref)).state == "present"
        assert lax.warnings == [
            f"TLS verification is off for {oci_registry.host}: its identity is not checked (listed as insecure)"
        ]


async def test_unreachable_registry_fails_fast_with_a_clear_error() -> None:
    host = f"127.0.0.1:{free_port()}"
    async with RegistryClient(insecure_registries=[host], timeout=3) as client:
        started = time.perf_counter()
        status = await client.check(f"{host}/mlops/nvidia-driver:580")
        with pytest.raises(RegistryError, match="registry unreachable"):
            await client.list_tags(f"{host}/mlops/nvidia-driver")
    assert time.perf_counter() - started < 2
    assert status.error == f"registry unreachable: {host}: connection refused (nothing listens on that port)"


@pytest.fixture
async def flaky_front(oci_registry: RegistryServer) -> AsyncIterator[tuple[str, list[str]]]:
    """A loopback HTTP front for the real registry that answers 503/429 first, as an overloaded registry does.

    Paths with ``/busy-once/`` get one ``503 Retry-After: 1`` then pass; ``/busy-always/`` always get
    ``429 Retry-After: 0``. Yields the front's host and the request log.
    """
    seen: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        if "/busy-always/" in request.path:
            return web.Response(status=429, headers={"Retry-After": "0"})
        if "/busy-once/" in request.path and seen.count(request.path) == 1:
            return web.Response(status=503, headers={"Retry-After": "1"})
        status, headers, body = oci_registry.request(
            request.method, request.path_qs, headers={"Accept": request.headers.get("Accept", "")}
        )
        keep = {k: v for k, v in headers.items() if k.lower() in {"docker-content-digest", "content-type"}}
        return web.Response(status=status, headers=keep, body=body if request.method != "HEAD" else None)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_busy_registry_is_retried_honouring_retry_after(
    oci_registry: RegistryServer, flaky_front: tuple[str, list[str]], tmp_path: Path
) -> None:
    front, seen = flaky_front
    once, always = repo_name("busy-once/x"), repo_name("busy-always/x")
    pushed = oci_registry.push_image(once, "580")
    log = tmp_path / "requests.log"
    requestlog.configure(log_file=str(log))
    try:
        async with RegistryClient(insecure_registries=[front]) as client:
            started = time.perf_counter()
            status = await client.check(f"{front}/{once}:580")
            waited = time.perf_counter() - started
            busy = await client.check(f"{front}/{always}:580")
    finally:
        requestlog.close()
    assert status.digest == pushed and waited >= 0.9
    assert busy.error == f"registry error: {front} keeps answering 429 Too Many Requests; try again later"
    assert seen.count(f"/v2/{always}/manifests/580") == 3  # bounded
    # the request log: one line per request, its status, time and retries
    lines = log.read_text().splitlines()
    assert re.search(rf" registry HEAD https?://{front}/v2/{once}/manifests/580 200 \d+ms retries=1$", lines[0])
    assert re.search(rf" registry HEAD https?://{front}/v2/{always}/manifests/580 429 \d+ms retries=2$", lines[-1])


async def test_a_registry_that_never_answers_times_out() -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        host = f"127.0.0.1:{silent.getsockname()[1]}"
        async with RegistryClient(insecure_registries=[host], timeout=0.3) as client:
            started = time.perf_counter()
            status = await client.check(f"{host}/mlops/nvidia-driver:580")
            elapsed = time.perf_counter() - started
    assert status.error == f"registry unreachable: {host}: no answer within 0.3 s"
    assert elapsed < 1.5


# -- authentication ---------------------------------------------------------------------------------


async def test_basic_auth_with_flag_credentials(oci_registry_auth: RegistryServer) -> None:
    repo = repo_name()
    pushed = oci_registry_auth.push_image(repo, "580")
    creds = {oci_registry_auth.host: Credentials(oci_registry_auth.username, oci_registry_auth.password)}
    async with client_for(oci_registry_auth, credentials=creds) as client:
        results = await client.check_many(
            [f"{oci_registry_auth.host}/{repo}:580", f"{oci_registry_auth.host}/{repo}:x"]
        )
        tags = await client.list_tags(f"{oci_registry_auth.host}/{repo}")
    assert [s.state for s in results.values()] == ["present", "missing"]
    assert next(iter(results.values())).digest == pushed and tags == ["580"]


async def test_basic_auth_from_auth_files(
    oci_registry_auth: RegistryServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_name()
    oci_registry_auth.push_image(repo, "580")
    creds = Credentials(oci_registry_auth.username, oci_registry_auth.password)
    docker = tmp_path / "explicit" / "config.json"
    docker.parent.mkdir()
    docker.write_text(json.dumps({"auths": {f"http://{oci_registry_auth.host}/": {"auth": creds.encoded()}}}))
    async with client_for(oci_registry_auth, auth_file=str(docker)) as client:
        assert (await client.check(f"{oci_registry_auth.host}/{repo}:580")).state == "present"
    # no explicit file: the usual locations (here DOCKER_CONFIG) are read
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "config.json").write_text(docker.read_text())
    async with client_for(oci_registry_auth) as client:
        assert (await client.check(f"{oci_registry_auth.host}/{repo}:580")).state == "present"
    # REGISTRY_AUTH_FILE (skopeo/podman) wins over docker's file
    other_login = tmp_path / "registry-auth.json"
    other_login.write_text(json.dumps({"auths": {oci_registry_auth.host: {"auth": Credentials("x", "y").encoded()}}}))
    monkeypatch.setenv("REGISTRY_AUTH_FILE", str(other_login))
    async with client_for(oci_registry_auth) as client:
        assert (await client.check(f"{oci_registry_auth.host}/{repo}:580")).error.startswith("unauthorized")


async def test_unauthorized_errors_are_clear_and_hold_no_secret(
    oci_registry_auth: RegistryServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    repo = repo_name()
    oci_registry_auth.push_image(repo, "580")
    ref = f"{oci_registry_auth.host}/{repo}:580"
    wrong = Credentials(oci_registry_auth.username, oci_registry_auth.password + "-wrong")
    async with client_for(oci_registry_auth) as anonymous:
        missing = await anonymous.check(ref)
        with pytest.raises(RegistryError) as raised:
            await anonymous.list_tags(ref)
    async with client_for(oci_registry_auth, credentials={oci_registry_auth.host: wrong}) as client:
        rejected = await client.check(ref)
    assert missing.state == "error" and missing.error.startswith("unauthorized:")
    assert "requires credentials" in missing.error and str(raised.value) == missing.error
    assert rejected.error.startswith(f"unauthorized: {oci_registry_auth.host} refused access to {repo}")
    assert f"user {oci_registry_auth.username}" in rejected.error
    everything = " ".join([repr(missing), repr(rejected), str(raised.value), caplog.text, repr(wrong)])
    for secret in (oci_registry_auth.password, *wrong.secrets()):
        assert secret not in everything


async def test_bearer_token_flow(oci_registry_token: RegistryServer, caplog: pytest.LogCaptureFixture) -> None:
    """The realm/service/scope flow of nvcr.io and Docker Hub, against the registry's real JWT check."""
    caplog.set_level(logging.DEBUG)
    server, tokens = oci_registry_token, oci_registry_token.token_server
    assert tokens is not None
    repo = repo_name()
    pushed = server.push_image(repo, "580")
    refs = [f"{server.host}/{repo}:580", f"{server.host}/{repo}:missing", f"{server.host}/{repo}:580"]
    creds = {server.host: Credentials(server.username, server.password)}
    issued_before = len(tokens.issued)
    async with client_for(server, credentials=creds) as client:
        results = await client.check_many(refs + [f"{server.host}/{repo}:t{n}" for n in range(10)])
        assert await client.list_tags(f"{server.host}/{repo}") == ["580"]
    assert results[refs[0]].digest == pushed and results[refs[1]].state == "missing"
    assert tokens.issued[issued_before:] == [f"repository:{repo}:pull"]  # one token, shared by all requests
    async with client_for(server) as anonymous:
        denied = await anonymous.check(refs[0])
    wrong = {server.host: Credentials(server.username, "not-" + server.password)}
    async with client_for(server, credentials=wrong) as client:
        rejected = await client.check(refs[0])
    assert denied.error == (
        f"unauthorized: {server.host} refused access to {repo} without credentials (private, or no such repository)"
    )
    assert (
        rejected.error
        == f"unauthorized: the token service of {server.host} refused the credentials of user {server.username} "
        "(from credentials given to the wizard)"
    )
    everything = repr(results) + repr(denied) + repr(rejected) + caplog.text
    assert server.password not in everything and "not-" + server.password not in everything


# -- credentials and references ---------------------------------------------------------------------


def test_credentials_never_show_the_password() -> None:
    creds = Credentials.parse("mlops:s3cret-value")
    assert "s3cret" not in repr(creds) and "s3cret" not in str(creds) and "s3cret" not in f"{[creds]}"
    with pytest.raises(ValueError, match="USER:PASSWORD") as raised:
        Credentials.parse("only-a-secret")
    assert "only-a-secret" not in str(raised.value)


def test_auth_file_formats(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    path.write_text(
        json.dumps(
            {
                "auths": {
                    "https://index.docker.io/v1/": {"auth": Credentials("hub", "h").encoded()},
                    "registry.example.com/mlops": {"username": "ml", "password": "p"},
                    "quay.io": {"identitytoken": "opaque"},
                },
                "credsStore": "desktop",
            }
        )
    )
    assert load_auth_file(str(path)) == {
        "docker.io": Credentials("hub", "h"),
        "registry.example.com/mlops": Credentials("ml", "p"),
        "quay.io": Credentials("<token>", "", identity_token="opaque"),
    }
    path.write_text('{"auths": {"x": {"auth": "c2VjcmV0"')
    with pytest.raises(ValueError, match=r"auth\.json: not valid JSON \(line 1"):
        load_auth_file(str(path))
    with pytest.raises(ValueError, match="cannot be read"):
        load_auth_file(str(tmp_path / "absent.json"))


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "nvcr.io/nvidia/driver:580-5.15.0-1048-nvidia-ubuntu22.04",
            ("nvcr.io", "nvidia/driver", "580-5.15.0-1048-nvidia-ubuntu22.04"),
        ),
        ("127.0.0.1:5055/mlops/nvidia-driver", ("127.0.0.1:5055", "mlops/nvidia-driver", "latest")),
        ("localhost/x:1", ("localhost", "x", "1")),
        ("ubuntu", ("docker.io", "library/ubuntu", "latest")),
        ("docker.io/ubuntu:22.04", ("docker.io", "library/ubuntu", "22.04")),
        ("nvidia/driver:580", ("docker.io", "nvidia/driver", "580")),
        ("r.example.com/a/b:t@sha256:" + "a" * 64, ("r.example.com", "a/b", "sha256:" + "a" * 64)),
    ],
)
def test_split_reference(reference: str, expected: tuple[str, str, str]) -> None:
    assert split_reference(reference) == expected


@pytest.mark.parametrize(
    "reference", ["", "  ", "nvcr.io/NVIDIA/driver:580", "nvcr.io/nvidia/driver:-bad", "a b", "x@sha256:12"]
)
def test_split_reference_refuses_non_references(reference: str) -> None:
    with pytest.raises(ValueError):
        split_reference(reference)


def test_missing_tools_skip_or_fail_with_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"REGISTRY TESTS SKIPPED: missing docker-registry: .*system-deps"):
        require_tools("docker-registry")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"missing skopeo, umoci: run `bash \.ci/system-deps\.sh`"):
        require_tools("skopeo", "umoci")


async def test_repositories_are_listed_and_the_mirror_holding_the_tags_is_found(oci_registry: RegistryServer) -> None:
    """The Driver step's search for a site's mirror (issue 25), against a real docker-registry's ``/v2/_catalog``."""
    from wizard.engine.defaults import registry_offers
    from wizard.registry.images import image_repositories

    image = f"nvidia-driver-{secrets.token_hex(4)}"  # one image name in two projects, neither used elsewhere
    holder, partial = f"mlops/{image}", f"team/{image}"
    tag = "580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"
    other = "580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5"
    oci_registry.push_image(holder, tag)
    oci_registry.push_image(holder, other)
    oci_registry.push_image(partial, tag)
    async with client_for(oci_registry) as client:
        listed = await client.repositories(oci_registry.host)
        assert {f"{oci_registry.host}/{holder}", f"{oci_registry.host}/{partial}"} <= set(listed)
        listing = await image_repositories(client, [oci_registry.host], image)
    assert sorted(listing[f"{oci_registry.host}/{holder}"]) == sorted([tag, other])
    groups = {
        (tag, "5.14.21-150500.55.166-default", "sle-micro5.5"),
        (other, "5.14.21-150500.55.171-default", "sle-micro5.5"),
    }
    (offer,) = registry_offers(listing, image, "580.126.09.1", groups, precompiled=True)
    assert (offer.repository, offer.note) == (f"{oci_registry.host}/{holder.rsplit('/', 1)[0]}", "holds every tag")
    (by_version,) = registry_offers(listing, image, "", groups, precompiled=True)  # no version chosen: the one held
    assert by_version.version == "580.126.09.1"
    only_one = {(other, "5.14.21-150500.55.171-default", "sle-micro5.5"), ("x-k-sle-micro5.5", "k", "sle-micro5.5")}
    (most,) = registry_offers(listing, image, "580.126.09.1", only_one, precompiled=True)  # the most, not all
    assert most.note == "holds 1 of 2 tags" and most.repository.endswith("/mlops")
