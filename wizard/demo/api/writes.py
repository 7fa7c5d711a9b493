"""Write paths of the demo API: create, replace, patch (JSON merge patch, server-side apply), delete.

No strategic merge patch nor JSON patch (415): no command of gpu-wizard, the README or the classroom sends one.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import json_merge_patch
from aiohttp import web

from wizard.demo.api import ssa
from wizard.demo.api.podspec import pod_spec_causes
from wizard.demo.api.reads import Target, json_response, parse_body
from wizard.demo.api.schema import check_object
from wizard.demo.api.status import ApiError, already_exists, bad_request, cause, conflict, invalid, not_found
from wizard.demo.api.store import Store, StoreConflict, StoreNotFound, now_rfc3339

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_OBJECT_CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


def _manager(request: web.Request) -> str:
    given = request.query.get("fieldManager")
    if given:
        return given
    agent = request.headers.get("User-Agent", "unknown")
    return agent.split("/", 1)[0] or "unknown"


def _dry_run(request: web.Request) -> bool:
    return "All" in request.query.getall("dryRun", [])


def _identity(target: Target, obj: Any, creating: bool) -> dict[str, Any]:
    """Check and complete apiVersion, kind, name and namespace of a request object."""
    rtype = target.rtype
    if not isinstance(obj, dict):
        raise bad_request(f"the body must be a {rtype.kind} object")
    if obj.get("apiVersion") not in (None, "", rtype.api_version):
        raise bad_request(
            f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version ({rtype.api_version})"
        )
    if obj.get("kind") not in (None, "", rtype.kind):
        raise bad_request(f"the kind in the data ({obj.get('kind')}) does not match the expected kind ({rtype.kind})")
    obj = {**obj, "apiVersion": rtype.api_version, "kind": rtype.kind}
    meta = dict(obj.get("metadata") or {})
    obj["metadata"] = meta
    if rtype.namespaced:
        if meta.get("namespace") not in (None, "", target.namespace):
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = target.namespace
    else:
        meta.pop("namespace", None)
    name = meta.get("name")
    if target.name is not None and name not in (None, "", target.name):
        raise bad_request(f"the name of the object ({name}) does not match the name on the URL ({target.name})")
    if target.name is not None:
        meta["name"] = target.name
    if creating:
        if not meta.get("name") and not meta.get("generateName"):
            raise invalid(
                rtype.kind,
                rtype.group,
                "",
                [cause("FieldValueRequired", "metadata.name", "Required value: name or generateName is required")],
            )
        if meta.get("name") and (len(meta["name"]) > 253 or not _NAME_RE.match(meta["name"])):
            raise invalid(
                rtype.kind,
                rtype.group,
                meta["name"],
                [cause("FieldValueInvalid", "metadata.name", f'Invalid value: "{meta["name"]}": {_NAME_HELP}')],
            )
    return obj


def _split_status(target: Target, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Main-resource writes keep the stored status; ``/status`` writes change only the status."""
    if not target.rtype.has_status:
        return new
    if target.subresource == "status":
        if old is None:
            raise not_found(target.rtype.plural, target.rtype.group, target.name or "")
        result = copy.deepcopy(old)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        return result
    new = dict(new)
    if old is not None and "status" in old:
        new["status"] = old["status"]
    else:
        new.pop("status", None)
    return new


def _validate(
    target: Target,
    request: web.Request,
    obj: dict[str, Any],
    name: str,
    *,
    partial: bool = False,
    mode: str | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Prune and validate a custom resource; Strict turns unknown fields into a 400."""
    rtype = target.rtype
    if rtype.schema is None:
        return obj, []
    report = check_object(obj, rtype.schema, defaults=not partial)
    scope = "status" if target.subresource == "status" else None
    causes = [
        c
        for c in report.causes
        if ((scope == "status") == c["field"].startswith("status") or not rtype.has_status)
        and not (partial and c["reason"] == "FieldValueRequired")
    ]
    unknown = [f for f in report.unknown if (scope == "status") == f.startswith("status") or not rtype.has_status]
    mode = mode or request.query.get("fieldValidation", "Warn")
    if unknown and mode == "Strict":
        listed = ", ".join(f'unknown field "{f}"' for f in unknown)
        raise bad_request(
            f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: strict decoding error: {listed}'
        )
    if causes:
        raise invalid(rtype.kind, rtype.group, name, causes)
    warnings = [f'unknown field "{f}"' for f in unknown] if mode == "Warn" else []
    result = report.obj
    if rtype.has_status:  # the other half (status, or everything but status) is not this write's to prune
        if scope == "status":
            result = {**obj, **({"status": report.obj["status"]} if "status" in report.obj else {})}
        elif "status" in obj:
            result = {**report.obj, "status": obj["status"]}
    return result, warnings


def _ensure_namespace(store: Store, target: Target) -> None:
    if target.rtype.namespaced and target.namespace and store.lookup("namespaces", target.namespace) is None:
        raise not_found("namespaces", "", target.namespace)


def _persist(
    store: Store,
    request: web.Request,
    target: Target,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    expect_rv: str | None,
) -> dict[str, Any]:
    rtype = target.rtype
    name = new["metadata"].get("name", "")
    causes = pod_spec_causes(rtype.plural, new)
    if causes:
        raise invalid(rtype.kind, rtype.group, name, causes)
    if _dry_run(request):
        out = copy.deepcopy(new)
        meta = out["metadata"]
        if old is None:
            meta.setdefault("uid", "00000000-0000-0000-0000-000000000000")
            meta.setdefault("creationTimestamp", now_rfc3339())
            meta["generation"] = 1
            meta.pop("resourceVersion", None)
        else:
            meta["resourceVersion"] = old["metadata"].get("resourceVersion")
        return out
    try:
        if old is None:
            new["metadata"].pop("resourceVersion", None)
            return store.create(rtype.plural, new)
        return store.update(rtype.plural, new, expect_rv=expect_rv or None)
    except StoreConflict:
        if old is None:
            raise already_exists(rtype.plural, rtype.group, name) from None
        raise conflict(rtype.plural, rtype.group, name, _OBJECT_CONFLICT) from None
    except StoreNotFound:
        raise not_found(rtype.plural, rtype.group, name) from None


async def create(store: Store, request: web.Request, target: Target) -> web.Response:
    """POST to a collection."""
    obj = _identity(target, parse_body(await request.read(), request.content_type), creating=True)
    _ensure_namespace(store, target)
    name = obj["metadata"].get("name", "")
    if name and store.lookup(target.rtype.plural, name, target.namespace) is not None:
        raise already_exists(target.rtype.plural, target.rtype.group, name)
    obj = _split_status(target, None, obj)
    obj, warnings = _validate(target, request, obj, name)
    obj = ssa.record_update(
        None, obj, manager=_manager(request), api_version=target.rtype.api_version, split_status=target.rtype.has_status
    )
    return json_response(_persist(store, request, target, None, obj, None), 201, warnings)


async def replace(store: Store, request: web.Request, target: Target) -> web.Response:
    """PUT of an object or its status."""
    assert target.name is not None
    obj = _identity(target, parse_body(await request.read(), request.content_type), creating=False)
    old = store.lookup(target.rtype.plural, target.name, target.namespace)
    if old is None:
        raise not_found(target.rtype.plural, target.rtype.group, target.name)
    expect_rv = (obj.get("metadata") or {}).get("resourceVersion")
    return _finish_update(store, request, target, old, obj, expect_rv)


def _finish_update(
    store: Store, request: web.Request, target: Target, old: dict[str, Any], new: dict[str, Any], expect_rv: str | None
) -> web.Response:
    new = _split_status(target, old, new)
    new["metadata"] = {**new.get("metadata", {}), "uid": old["metadata"].get("uid")}
    new, warnings = _validate(target, request, new, target.name or "")
    sub = "status" if target.subresource == "status" else ""
    rtype = target.rtype
    new = ssa.record_update(
        old,
        new,
        manager=_manager(request),
        api_version=rtype.api_version,
        subresource=sub,
        split_status=rtype.has_status,
    )
    return json_response(_persist(store, request, target, old, new, expect_rv), 200, warnings)


async def patch(store: Store, request: web.Request, target: Target) -> web.Response:
    """PATCH: merge patch or server-side apply (see the module's docstring)."""
    assert target.name is not None
    rtype = target.rtype
    ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
    body = parse_body(await request.read(), request.content_type)
    old = store.lookup(rtype.plural, target.name, target.namespace)
    if ctype == "application/apply-patch+yaml":
        return _apply(store, request, target, old, body)
    if old is None:
        raise not_found(rtype.plural, rtype.group, target.name)
    if ctype != "application/merge-patch+json":
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/apply-patch+yaml, not {ctype!r}",
        )
    new = json_merge_patch.merge(copy.deepcopy(old), copy.deepcopy(body))  # RFC 7386, leaving the stored object be
    new = _identity(target, new, creating=False)
    new_rv = new["metadata"].get("resourceVersion")
    if new_rv and new_rv != old["metadata"].get("resourceVersion"):
        raise conflict(rtype.plural, rtype.group, target.name, _OBJECT_CONFLICT)
    return _finish_update(store, request, target, old, new, new_rv)


def _apply(store: Store, request: web.Request, target: Target, old: dict[str, Any] | None, body: Any) -> web.Response:
    rtype = target.rtype
    manager = request.query.get("fieldManager")
    if not manager:
        raise invalid(
            rtype.kind,
            rtype.group,
            target.name or "",
            [cause("FieldValueRequired", "fieldManager", "Required value: is required for apply patch")],
        )
    applied = _identity(target, body, creating=old is None)
    if old is None:
        _ensure_namespace(store, target)
    applied, warnings = _validate(target, request, applied, target.name or "", partial=True)
    expect_rv = applied["metadata"].get("resourceVersion")
    if old is not None and expect_rv and expect_rv != old["metadata"].get("resourceVersion"):
        raise conflict(rtype.plural, rtype.group, target.name or "", _OBJECT_CONFLICT)
    force = request.query.get("force") in ("true", "1")
    sub = "status" if target.subresource == "status" else ""
    merged = ssa.apply(old, applied, manager=manager, force=force, subresource=sub, split_status=rtype.has_status)
    merged = _identity(target, merged, creating=old is None)
    if old is not None:
        merged = _split_status(target, old, merged)
    elif rtype.has_status:
        merged.pop("status", None)
    merged, _ = _validate(target, request, merged, target.name or "", mode="Ignore")
    result = _persist(store, request, target, old, merged, None)
    return json_response(result, 201 if old is None else 200, warnings)


def cascade(store: Store, deleted: dict[str, Any], resource: str) -> None:
    """Delete what the garbage collector would: dependents by owner uid, a namespace's content, a CRD's objects."""
    meta = deleted["metadata"]
    if resource == "namespaces":
        with store.lock:
            contents = [
                (res, obj)
                for res in store.resources()
                if res != "namespaces"
                for obj in store.iter_objects(res, meta["name"])
            ]
        for res, obj in contents:
            store.delete(res, obj["metadata"]["name"], meta["name"])
    if resource == "customresourcedefinitions":
        plural = str(((deleted.get("spec") or {}).get("names") or {}).get("plural") or "")
        for obj in list(store.iter_objects(plural)):
            store.delete(plural, obj["metadata"]["name"], obj["metadata"].get("namespace"))
    for res, obj in store.dependents(meta.get("uid", "")):
        gone = store.delete(res, obj["metadata"]["name"], obj["metadata"].get("namespace"), copy=False)
        if gone is not None:
            cascade(store, gone, res)


async def delete(store: Store, request: web.Request, target: Target) -> web.Response:
    """DELETE of one object, honouring preconditions, dryRun and propagationPolicy."""
    assert target.name is not None
    rtype = target.rtype
    raw = await request.read()
    options: dict[str, Any] = parse_body(raw, request.content_type) if raw.strip() else {}
    old = store.lookup(rtype.plural, target.name, target.namespace)
    if old is None:
        raise not_found(rtype.plural, rtype.group, target.name)
    pre = (options.get("preconditions") or {}) if isinstance(options, dict) else {}
    for key in ("uid", "resourceVersion"):
        if pre.get(key) and pre[key] != old["metadata"].get(key):
            why = f"Precondition failed: {key}: {pre[key]}, {key} in object meta: {old['metadata'].get(key)}"
            raise conflict(rtype.plural, rtype.group, target.name, why)
    if _dry_run(request) or "All" in (options.get("dryRun") or []):
        return json_response(old)
    gone = store.delete(rtype.plural, target.name, target.namespace)
    if gone is None:
        raise not_found(rtype.plural, rtype.group, target.name)
    policy = request.query.get("propagationPolicy") or options.get("propagationPolicy") or "Background"
    if policy != "Orphan":
        cascade(store, gone, rtype.plural)
    return json_response(gone)
