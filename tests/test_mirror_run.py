"""Running the mirror plan with the real skopeo between real loopback registries."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.helpers.fixtures.registry import RegistryServer
from tests.helpers.mirror import Item
from wizard.registry.auth import Credentials
from wizard.registry.mirror_run import MirrorError, MirrorOutcome, MirrorProgress, run_mirror, skopeo_available


@pytest.fixture(autouse=True)
def isolated_auth_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the developer's own registry logins out of skopeo and the wizard."""
    for var in ("REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker"))
    monkeypatch.setenv("HOME", str(tmp_path))


def tag() -> str:
    return f"580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5-{secrets.token_hex(3)}"


async def test_copies_with_the_digest_preserved_and_reports_progress(
    oci_registry: RegistryServer, skopeo_tool: str
) -> None:
    r = oci_registry.host
    single, multi = tag(), tag()
    digest = oci_registry.push_image("nvidia/driver", single, content=single.encode())
    index = oci_registry.push_index("nvidia/driver", multi, content=multi.encode())
    events: list[MirrorProgress] = []
    items = [
        Item(f"{r}/nvidia/driver:{single}", f"{r}/mirror/nvidia/driver:{single}"),
        Item(f"{r}/nvidia/driver:{multi}", f"{r}/mirror/nvidia/driver:{multi}"),
    ]
    outcomes = await run_mirror(items, skopeo=skopeo_tool, insecure_registries=[r], on_progress=events.append)
    assert [(o.ok, o.digest, o.error) for o in outcomes] == [(True, digest, ""), (True, index, "")]
    assert oci_registry.digest_of("mirror/nvidia/driver", multi) == index  # every platform came along
    first = [e for e in events if e.index == 0]
    assert first[0].event == "started" and first[0].message.startswith("skopeo copy --all --preserve-digests")
    assert first[-1] == MirrorProgress(0, 2, items[0].source, items[0].target, "done", digest)
    assert any(e.event == "copying" and "Copying" in e.message for e in first)
    assert [e.index for e in events] == sorted(e.index for e in events)  # one item after the other


async def test_a_failed_item_is_reported_and_the_run_goes_on(oci_registry: RegistryServer, skopeo_tool: str) -> None:
    r = oci_registry.host
    good = tag()
    oci_registry.push_image("nvidia/driver", good)
    events: list[MirrorProgress] = []
    outcomes = await run_mirror(
        [
            Item(f"{r}/nvidia/driver:does-not-exist", f"{r}/mirror/x:1"),
            Item(f"{r}/nvidia/driver:{good}", f"{r}/mirror/nvidia/driver:{good}"),
            Item(f"{r}/Bad/Ref:1", f"{r}/mirror/x:2"),
        ],
        skopeo=skopeo_tool,
        src_creds=Credentials("nobody", "unused-secret"),  # scoped per item: the bad reference must not break that
        insecure_registries=[r],
        on_progress=events.append,
    )
    assert [o.ok for o in outcomes] == [False, True, False]
    assert outcomes[0].error.startswith("skopeo copy failed (exit 1): ")
    assert "manifest unknown" in outcomes[0].error and "level=fatal" not in outcomes[0].error
    assert outcomes[2].error.startswith("invalid reference:")
    assert [e.event for e in events if e.event in {"done", "failed"}] == ["failed", "done", "failed"]


async def test_tls_stays_verified_unless_listed_insecure(oci_registry: RegistryServer, skopeo_tool: str) -> None:
    r = oci_registry.host
    src = tag()
    oci_registry.push_image("nvidia/driver", src)
    [outcome] = await run_mirror(
        [Item(f"{r}/nvidia/driver:{src}", f"{r}/mirror/nvidia/driver:{src}")], skopeo=skopeo_tool
    )
    assert not outcome.ok and "HTTP response to HTTPS client" in outcome.error


async def test_credentials_reach_skopeo_but_no_output(
    oci_registry: RegistryServer, oci_registry_auth: RegistryServer, skopeo_tool: str, tmp_path: Path
) -> None:
    src, dst = oci_registry.host, oci_registry_auth.host
    name = tag()
    digest = oci_registry.push_image("nvidia/driver", name)
    creds = Credentials(oci_registry_auth.username, oci_registry_auth.password)
    wrong = Credentials(creds.username, creds.password + "-wrong")
    item = Item(f"{src}/nvidia/driver:{name}", f"{dst}/mlops/nvidia-driver:{name}")
    events: list[MirrorProgress] = []
    outcomes: list[MirrorOutcome] = []
    insecure = [src, dst]
    for dest_creds in (creds, wrong):
        outcomes += await run_mirror(
            [item], skopeo=skopeo_tool, dest_creds=dest_creds, insecure_registries=insecure, on_progress=events.append
        )
    # the same login through an auth file, as `skopeo login --authfile` would write it
    authfile = tmp_path / "auth.json"
    authfile.write_text(json.dumps({"auths": {dst: {"auth": creds.encoded()}}}))
    outcomes += await run_mirror(
        [item], skopeo=skopeo_tool, authfile=str(authfile), insecure_registries=insecure, on_progress=events.append
    )
    assert [(o.ok, o.digest) for o in outcomes] == [(True, digest), (False, ""), (True, digest)]
    assert "unauthorized" in outcomes[1].error or "authentication required" in outcomes[1].error
    captured = repr(outcomes) + repr(events)
    for secret in {*creds.secrets(), *wrong.secrets()}:
        assert secret not in captured


async def test_missing_skopeo_is_a_clear_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-skopeo")
    assert not skopeo_available(missing)
    with pytest.raises(MirrorError, match="is not installed"):
        await run_mirror([Item("a.io/x:1", "b.io/x:1")], skopeo=missing)


async def test_a_stuck_copy_is_stopped(oci_registry: RegistryServer, skopeo_tool: str) -> None:
    r = oci_registry.host
    name = tag()
    oci_registry.push_image("nvidia/driver", name)
    [outcome] = await run_mirror(
        [Item(f"{r}/nvidia/driver:{name}", f"{r}/mirror/slow:{name}")],
        skopeo=skopeo_tool,
        insecure_registries=[r],
        timeout=0.01,
    )
    assert not outcome.ok and "was stopped" in outcome.error


async def test_copy_into_a_token_registry(
    oci_registry: RegistryServer, oci_registry_token: RegistryServer, skopeo_tool: str
) -> None:
    """skopeo's bearer-token flow with the credentials handed over in memory."""
    src, dst = oci_registry.host, oci_registry_token.host
    name = tag()
    digest = oci_registry.push_image("nvidia/driver", name)
    creds = Credentials(oci_registry_token.username, oci_registry_token.password)
    events: list[MirrorProgress] = []
    [outcome] = await run_mirror(
        [Item(f"{src}/nvidia/driver:{name}", f"{dst}/mlops/nvidia-driver:{name}")],
        skopeo=skopeo_tool,
        dest_creds=creds,
        insecure_registries=[src, dst],
        on_progress=events.append,
    )
    assert (outcome.ok, outcome.digest) == (True, digest)
    assert oci_registry_token.digest_of("mlops/nvidia-driver", name) == digest
    assert all(secret not in repr(events) for secret in creds.secrets())
