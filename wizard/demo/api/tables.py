"""Server-side printing (``meta.k8s.io/v1`` Table), so ``kubectl get`` shows a real cluster's columns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from typing import Any

from wizard.demo.api.kinds import ResourceType

Obj = dict[str, Any]
NONE = "<none>"


def human_duration(seconds: float) -> str:
    """Go's ``duration.HumanDuration``: 45s, 5m10s, 3h, 4d2h, 2y..."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(timestamp: str | None) -> str:
    """The AGE cell of a creationTimestamp."""
    if not timestamp:
        return "<unknown>"
    try:
        then = dt.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return "<unknown>"
    return human_duration((dt.datetime.now(dt.UTC) - then).total_seconds())


def _col(name: str, priority: int = 0, kind: str = "string", fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": name, "priority": priority}


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def _node_row(obj: Obj) -> list[Any]:
    status = obj.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    if (obj.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = _meta(obj).get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/") and "/" in k)
    if labels.get("kubernetes.io/role"):
        roles.append(labels["kubernetes.io/role"])
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    info = status.get("nodeInfo") or {}
    return [
        _meta(obj).get("name"),
        state,
        ",".join(roles) or NONE,
        age(_meta(obj).get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or NONE,
        addresses.get("ExternalIP") or NONE,
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def pod_status_reason(obj: Obj) -> tuple[str, int, int]:
    """The STATUS cell of a pod (``Running``, ``Init:0/1``, ``ImagePullBackOff``...), ready and restart counts."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    restarts, ready = 0, 0
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term and term.get("exitCode", 0) == 0:
            continue
        if term:
            reason = _terminated_reason(term, "Init:")
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break
    if not initializing:
        restarts, running = 0, False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            state = cs.get("state") or {}
            wait, term = state.get("waiting") or {}, state.get("terminated")
            if wait.get("reason"):
                reason = wait["reason"]
            elif term:
                reason = _terminated_reason(term)
            elif cs.get("ready") and "running" in state:
                running = True
                ready += 1
        if reason == "Completed" and running:
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            reason = "Running" if conditions.get("Ready") == "True" else "NotReady"
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    return reason, ready, restarts


def _pod_row(obj: Obj) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    reason, ready, restarts = pod_status_reason(obj)
    return [
        _meta(obj).get("name"),
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restarts,
        age(_meta(obj).get("creationTimestamp")),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        NONE,
    ]


Printer = tuple[list[dict[str, Any]], Callable[[Obj], list[Any]]]
_NAME, _AGE = _col("Name", fmt="name"), _col("Age")

PRINTERS: dict[str, Printer] = {
    "nodes": (
        [_NAME, _col("Status"), _col("Roles"), _AGE, _col("Version")]
        + [_col(n, 1) for n in ("Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime")],
        _node_row,
    ),
    "pods": (
        [_NAME, _col("Ready"), _col("Status"), _col("Restarts", kind="string"), _AGE]
        + [_col(n, 1) for n in ("IP", "Node", "Nominated Node", "Readiness Gates")],
        _pod_row,
    ),
}


def _json_path(obj: Obj, path: str) -> Any:
    node: Any = obj
    for part in path.strip().lstrip(".").split("."):
        if not part:
            continue
        index = None
        if part.endswith("]") and "[" in part:
            part, raw = part[:-1].split("[", 1)
            index = int(raw) if raw.isdigit() else None
        node = node.get(part) if isinstance(node, dict) else None
        if index is not None:
            node = node[index] if isinstance(node, list) and index < len(node) else None
    return node


def _custom_printer(rtype: ResourceType) -> Printer:
    columns = [_NAME]
    specs = list(rtype.printer_columns) or [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    for spec in specs:
        kind = spec.get("type", "string")
        columns.append(_col(spec["name"], spec.get("priority", 0), "string" if kind == "date" else kind))

    def row(obj: Obj) -> list[Any]:
        cells: list[Any] = [_meta(obj).get("name")]
        for spec in specs:
            value = _json_path(obj, spec.get("jsonPath", ""))
            if spec.get("type") == "date":
                value = age(value) if value else "<unknown>"
            cells.append("<none>" if value is None else value)
        return cells

    return columns, row


def printer_for(rtype: ResourceType) -> Printer:
    """Column definitions and the row function of a resource type."""
    if rtype.is_custom:
        return _custom_printer(rtype)
    return PRINTERS.get(
        rtype.plural,
        ([_NAME, _AGE], lambda o: [_meta(o).get("name"), age(_meta(o).get("creationTimestamp"))]),
    )


def row_object(obj: Obj, include: str) -> Obj | None:
    """The ``object`` of a row for ``includeObject`` = Object, Metadata (default) or None."""
    if include == "None":
        return None
    if include == "Object":
        return obj
    meta = {k: v for k, v in _meta(obj).items() if k != "managedFields"}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def table(
    rtype: ResourceType,
    objects: Iterable[Obj],
    list_meta: Obj,
    include: str = "Metadata",
    with_columns: bool = True,
) -> Obj:
    columns, row = printer_for(rtype)
    rows = []
    for obj in objects:
        entry: Obj = {"cells": row(obj)}
        shown = row_object(obj, include)
        if shown is not None:
            entry["object"] = shown
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns if with_columns else [],
        "rows": rows,
    }


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a Table (kubectl get does)."""
    return "as=Table" in accept
