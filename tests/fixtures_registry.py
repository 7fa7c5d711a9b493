"""Fixtures for a real OCI registry (Debian ``docker-registry``) on loopback, and tiny images to put in it.

``oci_registry`` is an open registry, ``oci_registry_auth`` one behind htpasswd Basic auth with a
user and password generated per run, ``oci_registry_token`` one behind bearer-token auth (a JWT
service from ``tests/registry_token.py``). Both are session-scoped (one per xdist worker), bind a free
127.0.0.1 port, and are stopped by their PID. Images are built in Python (gzip tar layer, config,
OCI manifest) and uploaded through the v2 API, so nothing needs the network. Without the binaries
the tests are skipped with a pointer to ``.ci/system-deps.sh`` (failed instead when ``CI=true``).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.registry_token import TokenServer

INSTALL_HINT = "run `bash .ci/system-deps.sh` (apt: docker-registry skopeo umoci apache2-utils)"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def require_tools(*names: str) -> None:
    """Skip (or, on CI, fail) the calling test when a system tool is missing."""
    missing = [name for name in names if shutil.which(name) is None]
    if not missing:
        return
    message = f"missing {', '.join(missing)}: {INSTALL_HINT}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(f"REGISTRY TESTS SKIPPED: {message}")


def free_port() -> int:
    """A TCP port nothing listens on right now (127.0.0.1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sha256(data: bytes) -> str:
    """``sha256:<hex>`` of some bytes, the OCI content address."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class ImageBlobs:
    """A single-platform OCI image held in memory."""

    layer: bytes
    config: bytes
    manifest: bytes

    @property
    def digest(self) -> str:
        """The manifest digest a registry reports for this image."""
        return sha256(self.manifest)


def build_image(content: bytes = b"hello", *, arch: str = "amd64") -> ImageBlobs:
    """A tiny valid image whose only layer holds ``/usr/bin/nvidia-smi`` with ``content``; deterministic."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("usr/bin/nvidia-smi")
        info.size, info.mode, info.mtime = len(content), 0o755, 0
        tar.addfile(info, io.BytesIO(content))
    layer = gzip.compress(raw.getvalue(), mtime=0)
    config = json.dumps(
        {
            "architecture": arch,
            "os": "linux",
            "config": {"Cmd": ["/usr/bin/nvidia-smi"]},
            "rootfs": {"type": "layers", "diff_ids": [sha256(raw.getvalue())]},
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {"mediaType": OCI_CONFIG, "digest": sha256(config), "size": len(config)},
            "layers": [{"mediaType": OCI_LAYER, "digest": sha256(layer), "size": len(layer)}],
        },
        sort_keys=True,
    ).encode()
    return ImageBlobs(layer, config, manifest)


def write_oci_layout(directory: Path, tag: str, content: bytes = b"hello") -> str:
    """Write an OCI image layout (for skopeo's ``oci:DIR:TAG``); returns the manifest digest."""
    image = build_image(content)
    blobs = directory / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    for data in (image.layer, image.config, image.manifest):
        (blobs / sha256(data).removeprefix("sha256:")).write_bytes(data)
    (directory / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    entry = {
        "mediaType": OCI_MANIFEST,
        "digest": image.digest,
        "size": len(image.manifest),
        "annotations": {"org.opencontainers.image.ref.name": tag},
    }
    (directory / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [entry]}))
    return image.digest


class RegistryServer:
    """One ``docker-registry serve`` process on 127.0.0.1 plus helpers to fill it over the v2 API."""

    def __init__(
        self,
        workdir: Path,
        *,
        username: str = "",
        password: str = "",
        token_server: TokenServer | None = None,
        tls: tuple[Path, Path] | None = None,
        client_ca: Path | None = None,
        ca: Path | None = None,
        own_client: tuple[Path, Path] | None = None,
    ) -> None:
        """``tls``: the server's (certificate, key) — https then; ``client_ca``: client certificates are required
        and checked against it; ``ca`` and ``own_client``: what this fixture's own requests trust and present."""
        self.workdir = workdir
        self.token_server = token_server
        self.port = free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"{'https' if tls else 'http'}://{self.host}"
        self.tls, self.client_ca = tls, client_ca
        self._context: ssl.SSLContext | None = None
        if tls:
            self._context = ssl.create_default_context(cafile=str(ca) if ca else None)
            if own_client:
                self._context.load_cert_chain(str(own_client[0]), str(own_client[1]))
        self.username = username
        self.password = password
        self.pid = 0
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Write a config, start the registry and wait until ``/v2/`` answers."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        auth = ""
        if self.token_server is not None:
            self.token_server.start()
            auth = self.token_server.registry_config()
        elif self.username:
            htpasswd = self.workdir / "htpasswd"
            result = subprocess.run(
                ["htpasswd", "-niB", self.username],
                input=self.password.encode(),
                capture_output=True,
                check=True,
            )
            htpasswd.write_bytes(result.stdout)
            auth = f"auth: {{htpasswd: {{realm: test-realm, path: {htpasswd}}}}}\n"
        config = self.workdir / "config.yml"
        tls = ""
        if self.tls:
            tls = f", tls: {{certificate: {self.tls[0]}, key: {self.tls[1]}"
            tls += f", clientcas: [{self.client_ca}]}}" if self.client_ca else "}"
        config.write_text(
            "version: 0.1\n"
            "log: {level: warn, fields: {service: registry}}\n"
            f"storage: {{filesystem: {{rootdirectory: {self.workdir / 'data'}}}, delete: {{enabled: true}}}}\n"
            f"http: {{addr: {self.host}, secret: {secrets.token_hex(16)}{tls}, "
            "headers: {X-Content-Type-Options: [nosniff]}}\n" + auth
        )
        log = (self.workdir / "registry.log").open("wb")
        self._process = subprocess.Popen(
            ["docker-registry", "serve", str(config)], stdout=log, stderr=subprocess.STDOUT
        )
        self.pid = self._process.pid
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"docker-registry exited: {(self.workdir / 'registry.log').read_text()[-2000:]}")
            try:
                status = self.request("GET", "/v2/")[0]
            except OSError:
                status = 0
            if status in (200, 401):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("docker-registry did not answer /v2/ within 15 s")

    def stop(self) -> None:
        """Stop the registry by its PID (and its token service)."""
        if self.token_server is not None:
            self.token_server.stop()
        if self._process is None or self._process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self._process.wait(5)

    def request(
        self, method: str, path: str, data: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """A raw v2 API call, authenticated as the registry's user; returns status, headers, body."""
        url = path if path.startswith("http") else self.url + path
        req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if self.token_server is not None:
            match = re.search(r"/v2/(.+?)/(?:manifests|blobs|tags)/", urllib.parse.urlsplit(url).path)
            scope = f"repository:{match[1]}:pull,push" if match else ""
            req.add_header("Authorization", f"Bearer {self.token_server.token(scope, granted=True)}")
        elif self.username:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(req, timeout=10, context=self._context) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def push_blob(self, repo: str, data: bytes) -> str:
        """Upload one blob (monolithic POST then PUT); returns its digest."""
        digest = sha256(data)
        status, headers, body = self.request("POST", f"/v2/{repo}/blobs/uploads/")
        assert status == 202, (status, body)
        location = headers["Location"]
        location += ("&" if "?" in location else "?") + f"digest={digest}"
        status, _, body = self.request("PUT", location, data, {"Content-Type": "application/octet-stream"})
        assert status == 201, (status, body)
        return digest

    def put_manifest(self, repo: str, tag: str, manifest: bytes, media_type: str) -> str:
        """Upload a manifest under a tag (or digest); returns the digest the registry reports."""
        status, headers, body = self.request(
            "PUT", f"/v2/{repo}/manifests/{tag}", manifest, {"Content-Type": media_type}
        )
        assert status == 201, (status, body)
        return headers["Docker-Content-Digest"]

    def push_image(self, repo: str, tag: str, *, content: bytes = b"hello", arch: str = "amd64") -> str:
        """Build and push a single-platform image; returns its manifest digest."""
        image = build_image(content, arch=arch)
        self.push_blob(repo, image.layer)
        self.push_blob(repo, image.config)
        digest = self.put_manifest(repo, tag, image.manifest, OCI_MANIFEST)
        assert digest == image.digest
        return digest

    def push_index(
        self, repo: str, tag: str, *, content: bytes = b"hello", arches: tuple[str, ...] = ("amd64", "arm64")
    ) -> str:
        """Push a multi-platform image (an OCI index over one image per arch); returns the index digest."""
        entries = []
        for arch in arches:
            image = build_image(content + arch.encode(), arch=arch)
            self.push_blob(repo, image.layer)
            self.push_blob(repo, image.config)
            self.put_manifest(repo, image.digest, image.manifest, OCI_MANIFEST)
            entries.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": image.digest,
                    "size": len(image.manifest),
                    "platform": {"architecture": arch, "os": "linux"},
                }
            )
        index = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}).encode()
        return self.put_manifest(repo, tag, index, OCI_INDEX)

    def digest_of(self, repo: str, tag: str) -> str:
        """The digest the registry has for ``repo:tag`` ('' when missing)."""
        accept = ", ".join([OCI_MANIFEST, OCI_INDEX])
        status, headers, _ = self.request("HEAD", f"/v2/{repo}/manifests/{tag}", headers={"Accept": accept})
        return headers.get("Docker-Content-Digest", "") if status == 200 else ""

    def delete_tag(self, repo: str, tag: str) -> None:
        """Delete the manifest ``repo:tag`` points at (the v2 API deletes by digest: its other tags go too)."""
        digest = self.digest_of(repo, tag)
        assert digest, f"{repo}:{tag} does not exist"
        status, _, body = self.request("DELETE", f"/v2/{repo}/manifests/{digest}")
        assert status == 202, (status, body)


def serve_registry(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    *,
    tools: tuple[str, ...] = (),
    **options: Any,
) -> Iterator[RegistryServer]:
    """A started :class:`RegistryServer` in a fresh folder (``options``: its keyword arguments), stopped after."""
    require_tools("docker-registry", *tools)
    workdir = tmp_path_factory.mktemp(name)
    server = RegistryServer(workdir, **options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def oci_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """An open docker-registry on 127.0.0.1 (plain http, deletes enabled)."""
    yield from serve_registry(tmp_path_factory, "registry")


@pytest.fixture(scope="session")
def oci_registry_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A docker-registry behind htpasswd Basic auth; ``.username`` / ``.password`` are fresh per run."""
    yield from serve_registry(
        tmp_path_factory,
        "registry-auth",
        tools=("htpasswd",),
        username=f"user-{secrets.token_hex(3)}",
        password=f"pw-{secrets.token_urlsafe(18)}",
    )


@pytest.fixture(scope="session")
def oci_registry_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A docker-registry behind bearer-token auth (``.token_server`` issues the JWTs; Basic to get one)."""
    workdir = tmp_path_factory.mktemp("registry-token")
    username, password = f"user-{secrets.token_hex(3)}", f"pw-{secrets.token_urlsafe(18)}"
    yield from serve_registry(
        tmp_path_factory,
        "registry-token",
        tools=("openssl",),
        username=username,
        password=password,
        token_server=TokenServer(workdir / "token", username, password),
    )


@pytest.fixture
def skopeo_tool() -> str:
    """The skopeo binary (skips / fails like the registry fixtures when it is missing)."""
    require_tools("skopeo")
    return "skopeo"
