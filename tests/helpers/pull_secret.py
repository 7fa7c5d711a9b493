"""The pull Secret a site creates for its registry (the wizard never writes one)."""

from __future__ import annotations

import base64
import json

PULL_SECRET = "regcred"


def add_pull_secret(store: object, host: str, username: str, password: str) -> None:
    """The Secret a site creates so the kubelet can pull from its registry (the wizard never writes it)."""
    config = json.dumps({"auths": {host: {"username": username, "password": password}}})
    store.create(  # type: ignore[attr-defined]
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/dockerconfigjson",
            "metadata": {"name": PULL_SECRET, "namespace": "gpu-operator"},
            "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
        },
    )
