"""Discovery documents of the demo API: ``/version``, ``/api``, ``/apis``, resource lists and OpenAPI v3."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from wizard.demo.api.kinds import Registry, ResourceType

KUBE_VERSION = {"major": "1", "minor": "33", "patch": "4"}
"""The Kubernetes release the demo claims to be (the kubectl dispatcher picks its client by it)."""


def version_info() -> dict[str, Any]:
    """``/version``: a v1.33 server whose build strings name the demo, for people (no client reads them)."""
    git_version = f"v{KUBE_VERSION['major']}.{KUBE_VERSION['minor']}.{KUBE_VERSION['patch']}+gpu-wizard-demo"
    info: dict[str, Any] = {
        "major": KUBE_VERSION["major"],
        "minor": KUBE_VERSION["minor"],
        "emulationMajor": KUBE_VERSION["major"],
        "emulationMinor": KUBE_VERSION["minor"],
        "gitVersion": git_version,
        "gitCommit": "gpu-wizard-demo-simulated-cluster",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "gc",
        "platform": "linux/amd64 (gpu-wizard demo: simulated cluster)",
    }
    return info


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by number (higher sorts first when reversed)."""
    match = _VERSION_RE.match(version)
    if not match:
        return (0, 0, 0)
    level = {"alpha": 1, "beta": 2, None: 3}[match.group(2)]
    return (level, int(match.group(1)), int(match.group(3) or 0))


def _sorted_versions(versions: list[str]) -> list[str]:
    return sorted(versions, key=version_priority, reverse=True)


def api_versions(server_address: str) -> dict[str, Any]:
    """``/api``: the core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    """``/apis``: every named group with its versions, preferred (highest priority) first."""
    groups = []
    for group, versions in registry.group_versions().items():
        if not group:
            continue
        ordered = _sorted_versions(versions)
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    """``/apis/<group>``: one group, or None when not served."""
    for item in api_group_list(registry)["groups"]:
        if item["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **item}
    return None


def _resource_entries(rtype: ResourceType) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {
        "name": rtype.plural,
        "singularName": rtype.singular,
        "namespaced": rtype.namespaced,
        "kind": rtype.kind,
        "verbs": list(rtype.verbs),
    }
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)
    if not rtype.is_custom:
        entry["storageVersionHash"] = hashlib.sha256(rtype.plural.encode()).hexdigest()[:11]
    entries = [entry]
    for sub in rtype.subresources:
        verbs = {"status": ["get", "patch", "update"], "log": ["get"], "exec": ["create", "get"]}[sub]
        kind = {"log": "Pod", "exec": "PodExecOptions"}.get(sub, rtype.kind)
        entries.append(
            {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
        )
    return entries


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """``/api/v1`` or ``/apis/<group>/<version>``: the resources of one group/version, or None."""
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    resources = [entry for rtype in types for entry in _resource_entries(rtype)]
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


_PATCH_TYPES = ("application/apply-patch+yaml", "application/merge-patch+json")
_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _schema_name(rtype: ResourceType) -> str:
    group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{group}.{rtype.version}.{rtype.kind}"


def openapi_v3_doc(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group/version: PATCH operations and, for CRDs, their schemas."""
    types = [t for t in registry.all() if t.group == group and t.version == version]
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in types:
        gvk = {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}
        ref = {"$ref": f"#/components/schemas/{_schema_name(rtype)}"}
        params = [{"name": p, "in": "query", "schema": {"type": "string"}} for p in _QUERY_PARAMS]
        scope = "/namespaces/{namespace}" if rtype.namespaced else ""
        item_path = f"/{_gv_path(group, version)}{scope}/{rtype.plural}/{{name}}"
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        paths[item_path] = {
            "get": {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "get", "responses": ok},
            "patch": {
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
                "parameters": params,
                "requestBody": {"content": {t: {"schema": {"type": "object"}} for t in _PATCH_TYPES}},
                "responses": ok,
            },
        }
        schema: dict[str, Any] = dict(rtype.schema) if rtype.schema else {"type": "object"}
        schema["x-kubernetes-group-version-kind"] = [gvk]
        schemas[_schema_name(rtype)] = schema
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (gpu-wizard demo)", "version": version_info()["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_v3_root(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: where each group/version's document lives (hash = content version)."""
    paths: dict[str, Any] = {}
    for group, versions in registry.group_versions().items():
        for version in versions:
            doc = openapi_v3_doc(registry, group, version)
            digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
            paths[_gv_path(group, version)] = {
                "serverRelativeURL": f"/openapi/v3/{_gv_path(group, version)}?hash={digest}"
            }
    return {"paths": paths}
