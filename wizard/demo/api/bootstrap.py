"""What a fresh demo cluster needs before it serves: the operator's real CRDs, and a kubeconfig to reach it."""

from __future__ import annotations

import base64
import copy
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.bundled import operator_crd
from wizard.demo.api.store import Store
from wizard.demo.rules.operator_rules import bundle_of

CONTEXT = "gpu-wizard-demo"
DEMO_EXTENSION = "gpu-wizard.dev/demo"
"""The cluster ``extensions`` entry that marks this kubeconfig as the demo's: ``simulated: true`` and
``registryMirrors`` (registry host -> mirror URL). Only a kubeconfig written here carries it."""


def established_status(crd: dict[str, Any]) -> dict[str, Any]:
    """A CRD's status once the API server's apiextensions controllers accepted its names and serve it."""
    return {
        "acceptedNames": crd["spec"]["names"],
        "storedVersions": [v["name"] for v in crd["spec"]["versions"] if v.get("storage")],
        "conditions": [
            {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": "2026-01-01T00:00:00Z"}
            for t, r, m in (
                ("NamesAccepted", "NoConflicts", "no conflicts found"),
                ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            )
        ],
    }


def register_crds(store: Store, release: str) -> None:
    """Store the operator release's real ClusterPolicy and NVIDIADriver CRDs, Established."""
    bundle = bundle_of(release)
    for plural in ("clusterpolicies", "nvidiadrivers"):
        crd = copy.deepcopy(operator_crd(bundle, plural))
        crd["status"] = established_status(crd)
        store.create("customresourcedefinitions", crd)


def marker_text(registry_mirrors: Mapping[str, str], scenario: str = "") -> str:
    """The cluster's ``extensions`` list (YAML, indented for a cluster entry) with the demo's marker."""
    mirrors = "".join(f"\n          {json.dumps(h)}: {json.dumps(u)}" for h, u in sorted(registry_mirrors.items()))
    return (
        f"    extensions:\n    - name: {DEMO_EXTENSION}\n      extension:\n        simulated: true\n"
        f"        registryMirrors:{mirrors or ' {}'}\n"
        + (f"        scenario: {json.dumps(scenario)}\n" if scenario else "")
    )


def kubeconfig_text(
    url: str,
    token: str,
    ca_pem: bytes | None = None,
    registry_mirrors: Mapping[str, str] | None = None,
    scenario: str = "",
) -> str:
    """A kubeconfig with cluster, user and context ``gpu-wizard-demo``, the CA for https and the demo's marker."""
    ca = f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n" if ca_pem else ""
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {CONTEXT}\n  cluster:\n    server: {url}\n{ca}{marker_text(registry_mirrors or {}, scenario)}"
        f"users:\n- name: {CONTEXT}\n  user:\n    token: {json.dumps(token)}\n"
        f"contexts:\n- name: {CONTEXT}\n  context:\n    cluster: {CONTEXT}\n    user: {CONTEXT}\n"
        f"current-context: {CONTEXT}\npreferences: {{}}\n"
    )


def write_kubeconfig(
    path: Path,
    url: str,
    token: str,
    ca_pem: bytes | None = None,
    registry_mirrors: Mapping[str, str] | None = None,
    scenario: str = "",
) -> None:
    """Write the kubeconfig readable by the owner only (it holds the token)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(kubeconfig_text(url, token, ca_pem, registry_mirrors, scenario))
    os.chmod(path, 0o600)
