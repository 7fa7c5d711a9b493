"""Image pulls of the simulated kubelet: which references resolve, to which digest, and containerd's errors."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from wizard.demo.rules.imageref import parse_reference
from wizard.demo.scenarios.scenario import RegistrySpec

MANIFEST_ACCEPT = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    )
)


@dataclass(frozen=True)
class PullResult:
    """The outcome of pulling one image reference."""

    ok: bool
    image_id: str = ""
    """``host/path@sha256:…`` as containerd reports it in ``imageID``."""
    reason: str = ""
    """``ErrImagePull`` or ``InvalidImageName`` when not ok."""
    message: str = ""


def fake_digest(text: str) -> str:
    """A stable, realistic-looking digest for an image nobody published in the scenario."""
    return "sha256:" + hashlib.sha256(f"gpu-wizard-demo:{text}".encode()).hexdigest()


def _normalized(reference: str) -> tuple[str, str, str, str]:
    """(host, path, tag-or-digest, the reference as containerd spells it)."""
    host, path, tag = parse_reference(reference)
    sep = "@" if tag.startswith("sha256:") else ":"
    return host, path, tag, f"{host}/{path}{sep}{tag}"


def _org(repository: str) -> str:
    """``nvcr.io/nvidia`` of ``nvcr.io/nvidia/k8s/container-toolkit``: the host and the first path segment."""
    return "/".join(repository.split("/", 2)[:2])


# The container status's ErrImagePull message is the runtime's error alone, as the kubelet sets it (kubernetes
# pkg/kubelet/images/image_manager.go, evalCRIPullErr); its ``Failed to pull image "…": `` prefix is the
# event's wording (wizard.demo.sim.events), as tests/realcluster/kwokpull.py plays it on the real server.
def _not_found(full: str) -> PullResult:
    return PullResult(
        False,
        reason="ErrImagePull",
        message=(
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": {full}: not found'
        ),
    )


def _failed(full: str, why: str) -> PullResult:
    return PullResult(
        False,
        reason="ErrImagePull",
        message=(
            f'rpc error: code = Unknown desc = failed to pull and unpack image "{full}": '
            f'failed to resolve reference "{full}": {why}'
        ),
    )


def _invalid(reference: str) -> PullResult:
    return PullResult(
        False,
        reason="InvalidImageName",
        message=f'Failed to apply default image tag "{reference}": couldn\'t parse image name "{reference}": '
        "invalid reference format",
    )


def basic_auth_for(secrets: Iterable[Mapping[str, Any]], host: str) -> str:
    """An ``Authorization: Basic`` value for ``host`` from dockerconfigjson pull secrets, or ""."""
    for secret in secrets:
        data = secret.get("data") or {}
        raw = data.get(".dockerconfigjson") or data.get(".dockercfg")
        if not raw:
            continue
        try:
            config = json.loads(base64.b64decode(raw))
        except (ValueError, TypeError):
            continue
        auths = config.get("auths", config) if isinstance(config, dict) else {}
        for key, entry in auths.items():
            key_host = key.split("://", 1)[-1].split("/", 1)[0]
            if key_host != host or not isinstance(entry, dict):
                continue
            if entry.get("auth"):
                return f"Basic {entry['auth']}"
            if entry.get("username"):
                token = base64.b64encode(f"{entry['username']}:{entry.get('password', '')}".encode()).decode()
                return f"Basic {token}"
    return ""


class Puller:
    """Resolves image references for the simulated kubelet, per the scenario's registry section."""

    def __init__(self, spec: RegistrySpec, published: Iterable[str] = (), cached: Iterable[str] = ()) -> None:
        """``published``: further references the catalog hosts hold (the operator's own images); ``cached``: images
        the nodes hold already (the scenario's workloads ran before the demo started), resolved without a pull."""
        self.spec = spec
        self.cached = frozenset(cached)
        self.hosts = set(spec.catalog_hosts())
        self.catalog = {repo: dict(tags) for repo, tags in spec.catalog.items()}
        self._published: set[str] = set()
        for reference in published:
            host, path, tag, full = _normalized(reference)
            repo = f"{host}/{path}"
            if repo not in spec.catalog:
                self._published.add(repo)
            self.catalog.setdefault(repo, {}).setdefault(tag, fake_digest(full))
        # Without a real registry the demo's own /v2/ answers for the catalog's organisations, so a tag it
        # does not hold fails as on a real node (assets/scenarios/README.md, "registry").
        self.orgs = set() if spec.url else {_org(repo) for repo in self.catalog}

    def needs_http(self, reference: str) -> bool:
        """Whether resolving this reference asks the real registry at ``registry.url``."""
        try:
            host, path, _ = parse_reference(reference)
        except ValueError:
            return False
        if reference in self.cached and f"{host}/{path}" not in self.spec.catalog:
            return False  # on the node already
        return bool(self.spec.url) and host in self.hosts and f"{host}/{path}" not in self._published

    def resolve_offline(self, reference: str) -> PullResult:
        """Resolve from the catalog alone (also used to seed pods that were already running)."""
        try:
            host, path, tag, full = _normalized(reference)
        except ValueError:
            return _invalid(reference)
        if reference in self.cached and f"{host}/{path}" not in self.spec.catalog:
            return PullResult(True, image_id=f"{host}/{path}@{fake_digest(full)}")  # on the node: IfNotPresent
        if not self.spec.public and host not in self.hosts:
            # An air-gapped cluster reaches its catalog hosts only, whatever NVIDIA's registries hold: the operand
            # images left at nvcr.io (or registry.k8s.io) fail on every node as the driver's would.
            return _failed(
                full,
                f'failed to do request: Head "https://{host}/v2/{path}/manifests/{tag}": dial tcp: '
                f"lookup {host} on 10.0.0.2:53: no such host",
            )
        tags = self.catalog.get(f"{host}/{path}")
        if tags is None and host not in self.hosts and _org(f"{host}/{path}") not in self.orgs:
            return PullResult(True, image_id=f"{host}/{path}@{fake_digest(full)}")
        if tags is None and self.spec.url:
            # A real registry stands in: an image missing from the catalog gets a stable digest offline.
            return PullResult(True, image_id=f"{host}/{path}@{fake_digest(full)}")
        tags = tags or {}
        if tag.startswith("sha256:"):
            return PullResult(True, image_id=f"{host}/{path}@{tag}") if tag in tags.values() else _not_found(full)
        digest = tags.get(tag)
        if digest is None:
            return _not_found(full)
        return PullResult(True, image_id=f"{host}/{path}@{digest}")

    async def resolve_many(
        self, requests: Iterable[tuple[str, str]], timeout_s: float = 5.0
    ) -> dict[tuple[str, str], PullResult]:
        """Resolve ``(reference, authorization)`` pairs; catalog hosts over HTTP when ``registry.url`` is set."""
        unique = list(dict.fromkeys(requests))
        results: dict[tuple[str, str], PullResult] = {}
        remote = [r for r in unique if self.needs_http(r[0])]
        for req in unique:
            if req not in remote:
                results[req] = self.resolve_offline(req[0])
        if remote:
            timeout = aiohttp.ClientTimeout(total=timeout_s)
            async with aiohttp.ClientSession(timeout=timeout) as session:
                answers = await asyncio.gather(*(self._head(session, ref, auth) for ref, auth in remote))
            results.update(zip(remote, answers, strict=True))
        return results

    async def _head(self, session: aiohttp.ClientSession, reference: str, auth: str) -> PullResult:
        host, path, tag, full = _normalized(reference)
        url = f"{self.spec.url.rstrip('/')}/v2/{path}/manifests/{tag}"
        headers = {"Accept": MANIFEST_ACCEPT}
        if auth:
            headers["Authorization"] = auth
        shown = f"https://{host}/v2/{path}/manifests/{tag}"
        try:
            async with session.head(url, headers=headers) as resp:
                if resp.status == 404:
                    return _not_found(full)
                if resp.status in (401, 403):
                    return _failed(
                        full,
                        "pull access denied, repository does not exist or may require authorization: "
                        "authorization failed: no basic auth credentials"
                        if not auth
                        else f"failed to authorize: unexpected status from HEAD request to {shown}: "
                        f"{resp.status} {resp.reason}",
                    )
                digest = resp.headers.get("Docker-Content-Digest", "")
                if resp.status != 200 or not digest:
                    return _failed(full, f"unexpected status from HEAD request to {shown}: {resp.status} {resp.reason}")
                return PullResult(True, image_id=f"{host}/{path}@{digest}")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return _failed(full, f'failed to do request: Head "{shown}": {exc}')
