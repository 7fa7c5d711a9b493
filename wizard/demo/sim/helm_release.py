"""Helm's record of a release, as ``helm install`` keeps it: a Secret ``sh.helm.release.v1.<name>.v<revision>``."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

CHART_NAME = "gpu-operator"
FIRST_DEPLOYED = "2026-01-05T09:00:00Z"


def release_secret(
    name: str, namespace: str, release: str, values: dict[str, Any], revision: int = 1
) -> dict[str, Any]:
    """The Secret Helm writes for revision ``revision`` of release ``name`` of the operator's chart ``release``."""
    record = {
        "name": name,
        "namespace": namespace,
        "version": revision,
        "info": {
            "first_deployed": FIRST_DEPLOYED,
            "last_deployed": FIRST_DEPLOYED,
            "deleted": "",
            "description": "Install complete" if revision == 1 else "Upgrade complete",
            "status": "deployed",
        },
        "chart": {
            "metadata": {"name": CHART_NAME, "version": release, "appVersion": release, "apiVersion": "v2"},
            "values": {},
            "templates": [],
        },
        "config": values,
        "manifest": "",
    }
    payload = base64.b64encode(gzip.compress(json.dumps(record).encode(), mtime=0)).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "helm.sh/release.v1",
        "metadata": {
            "name": f"sh.helm.release.v1.{name}.v{revision}",
            "namespace": namespace,
            "labels": {"name": name, "owner": "helm", "status": "deployed", "version": str(revision)},
        },
        "data": {"release": base64.b64encode(payload.encode()).decode()},
    }
