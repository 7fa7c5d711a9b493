"""The demo cluster's image registry: a read-only OCI distribution API (``/v2/<host>/<path>``) over the catalog."""

from __future__ import annotations

import json
from collections.abc import Mapping

from aiohttp import web

INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"


def _error(status: int, code: str, message: str, detail: str = "") -> web.Response:
    body = {"errors": [{"code": code, "message": message, "detail": detail}]}
    return web.json_response(body, status=status, headers={"Docker-Distribution-Api-Version": "registry/2.0"})


def _manifest(repository: str, tag: str, digest: str) -> bytes:
    """A stand-in image index naming what it stands for (the catalog's digest is authoritative)."""
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": [],
        "annotations": {
            "org.opencontainers.image.ref.name": tag,
            "org.opencontainers.image.base.name": repository,
            "io.gpu-wizard.demo.digest": digest,
        },
    }
    return json.dumps(index, sort_keys=True).encode()


def handle(request: web.Request, catalog: Mapping[str, Mapping[str, str]]) -> web.Response:
    """Answer one ``/v2/…`` request from ``catalog`` (``{"host/path/image": {tag: digest}}``)."""
    rest = request.path[len("/v2/") :] if request.path.startswith("/v2/") else ""
    if request.method not in ("GET", "HEAD"):
        return _error(405, "UNSUPPORTED", "the demo registry is read-only")
    if not rest.strip("/"):
        return web.json_response({}, headers={"Docker-Distribution-Api-Version": "registry/2.0"})
    if rest.rstrip("/") == "_catalog":  # what a docker-registry lists: every repository it holds
        return web.json_response(
            {"repositories": sorted(catalog)}, headers={"Docker-Distribution-Api-Version": "registry/2.0"}
        )
    if rest.endswith("/tags/list"):
        repository = rest[: -len("/tags/list")]
        tags = catalog.get(repository)
        if tags is None:
            return _error(404, "NAME_UNKNOWN", "repository name not known to registry", repository)
        return web.json_response({"name": repository, "tags": sorted(tags)})
    repository, marker, reference = rest.rpartition("/manifests/")
    if not marker:
        return _error(404, "UNSUPPORTED", "the demo registry serves manifests and tag lists only")
    tags = catalog.get(repository)
    if tags is None:
        return _error(404, "NAME_UNKNOWN", "repository name not known to registry", repository)
    if reference.startswith("sha256:"):
        tag = next((t for t, d in tags.items() if d == reference), "")
        digest = reference if tag else ""
    else:
        tag, digest = reference, tags.get(reference, "")
    if not digest:
        return _error(404, "MANIFEST_UNKNOWN", "manifest unknown", f"{repository}:{reference}")
    body = _manifest(repository, tag, digest)
    headers = {
        "Docker-Content-Digest": digest,
        "Docker-Distribution-Api-Version": "registry/2.0",
        "Content-Type": INDEX_MEDIA_TYPE,
        "Content-Length": str(len(body)),
    }
    if request.method == "HEAD":
        return web.Response(status=200, headers=headers)
    return web.Response(status=200, body=body, headers=headers)
