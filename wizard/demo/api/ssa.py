"""Field ownership (``metadata.managedFields``) and server-side apply, after structured-merge-diff.

Simplified: maps merge granularly, every list is atomic, and ``fieldsV1`` has no ``.`` self-entries.
"""

from __future__ import annotations

import copy
from typing import Any

from wizard.demo.api.status import ApiError
from wizard.demo.api.store import now_rfc3339

Path = tuple[str, ...]
_META_TRACKED = ("labels", "annotations", "finalizers", "ownerReferences")


def tracked(obj: dict[str, Any], subresource: str, split_status: bool) -> dict[str, Any]:
    """The part of an object whose fields managers own, for the main resource or ``status``."""
    if subresource == "status":
        return {"status": obj["status"]} if isinstance(obj.get("status"), dict) else {}
    out: dict[str, Any] = {}
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in _META_TRACKED if k in meta}
    if kept:
        out["metadata"] = kept
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata") or (key == "status" and split_status):
            continue
        out[key] = value
    return out


def leaves(obj: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned leaf: scalars, lists (atomic) and empty maps, by path."""
    out: dict[Path, Any] = {}
    if isinstance(obj, dict) and (obj or not prefix):
        for key, value in obj.items():
            out.update(leaves(value, (*prefix, key)))
    else:
        out[prefix] = obj
    return out


def _value_at(obj: Any, path: Path) -> tuple[bool, Any]:
    node = obj
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def decode_fields(fields_v1: dict[str, Any], prefix: Path = ()) -> set[Path]:
    """``{"f:spec":{"f:x":{}}}`` -> ``{("spec","x")}`` (``.`` self-entries are ignored)."""
    out: set[Path] = set()
    for key, value in fields_v1.items():
        if key == ".":
            continue
        name = key[2:] if key.startswith("f:") else key
        if isinstance(value, dict) and any(k != "." for k in value):
            out |= decode_fields(value, (*prefix, name))
        else:
            out.add((*prefix, name))
    return out


def encode_fields(paths: set[Path]) -> dict[str, Any]:
    """The inverse of :func:`decode_fields`."""
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part if part[:2] in ("k:", "v:", "i:") else f"f:{part}", {})
    return root


def format_path(path: Path) -> str:
    """A field path as structured-merge-diff prints it: ``.spec.driver.version``."""
    return "".join(f".{part}" for part in path)


class _Entry:
    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.fields = decode_fields(raw.get("fieldsV1") or {})

    @property
    def subresource(self) -> str:
        return str(self.raw.get("subresource") or "")

    def identity(self) -> tuple[str, str, str, str]:
        op = self.raw.get("operation", "Update")
        version = "" if op == "Apply" else self.raw.get("apiVersion", "")
        return (self.raw.get("manager", ""), op, self.subresource, version)

    def printed(self) -> str:
        text = f'"{self.raw.get("manager", "")}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.raw.get("operation") == "Update":
            text += f" using {self.raw.get('apiVersion', '')}"
        return text

    def dump(self) -> dict[str, Any]:
        out = {k: v for k, v in self.raw.items() if k != "fieldsV1"}
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = encode_fields(self.fields)
        return out


def _entries(obj: dict[str, Any] | None) -> list[_Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return [_Entry(dict(item)) for item in raw if isinstance(item, dict)]


def _upsert(entries: list[_Entry], new: _Entry) -> list[_Entry]:
    out = [e for e in entries if e.identity() != new.identity()]
    out.append(new)
    return [e for e in out if e.fields]


def _with_entries(obj: dict[str, Any], entries: list[_Entry]) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    meta["managedFields"] = [e.dump() for e in entries]
    if not meta["managedFields"]:
        del meta["managedFields"]
    return obj


def conflict_error(conflicts: list[tuple[_Entry, Path]]) -> ApiError:
    """The 409 of a failed apply, worded as the API server words it."""
    causes = [
        {"reason": "conflict", "message": f"conflict with {e.printed()}: {format_path(p)}", "field": format_path(p)}
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}"
    else:
        by_manager: dict[str, list[str]] = {}
        for entry, path in conflicts:
            by_manager.setdefault(entry.printed(), []).append(format_path(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, message, reason="Conflict", details={"causes": causes})


def _remove_path(obj: dict[str, Any], path: Path) -> None:
    parents: list[tuple[dict[str, Any], str]] = []
    node: Any = obj
    for part in path[:-1]:
        if not isinstance(node, dict) or not isinstance(node.get(part), dict):
            return
        parents.append((node, part))
        node = node[part]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    for parent, key in reversed(parents):  # drop maps the removal left empty
        if parent[key] == {}:
            del parent[key]
        else:
            break


def _set_path(obj: dict[str, Any], path: Path, value: Any) -> None:
    node = obj
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = copy.deepcopy(value)


def apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    subresource: str = "",
    split_status: bool = False,
) -> dict[str, Any]:
    """Server-side apply of ``applied`` onto ``live`` (None: create); returns the merged object."""
    scope = "status" if subresource == "status" else ""
    entries = _entries(live)
    mine_id = (manager, "Apply", subresource, "")
    previous = next((e.fields for e in entries if e.identity() == mine_id), set())
    want = leaves(tracked(applied, scope, split_status))
    want.pop((), None)
    base = live or {}
    conflicts: list[tuple[_Entry, Path]] = []
    for entry in entries:
        if entry.identity() == mine_id or entry.subresource != subresource:
            continue
        for path in sorted(entry.fields & want.keys()):
            found, current = _value_at(base, path)
            if found and current != want[path]:
                conflicts.append((entry, path))
    if conflicts and not force:
        raise conflict_error(conflicts)
    for entry, path in conflicts:
        entry.fields.discard(path)
    result: dict[str, Any] = (
        copy.deepcopy(base) if live else {"apiVersion": applied.get("apiVersion"), "kind": applied.get("kind")}
    )
    meta: dict[str, Any] = result.setdefault("metadata", {})
    for key in ("name", "namespace", "generateName"):
        if key in (applied.get("metadata") or {}) and key not in meta:
            meta[key] = applied["metadata"][key]
    others: set[Path] = set()
    for entry in entries:
        if entry.identity() != mine_id and entry.subresource == subresource:
            others |= entry.fields
    for path in previous - want.keys() - others:
        _remove_path(result, path)
    for path, value in want.items():
        _set_path(result, path, value)
    mine = _Entry(
        {
            "manager": manager,
            "operation": "Apply",
            "apiVersion": applied.get("apiVersion", ""),
            "time": now_rfc3339(),
            **({"subresource": subresource} if subresource else {}),
        }
    )
    mine.fields = set(want)
    return _with_entries(result, _upsert(entries, mine))


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    subresource: str = "",
    split_status: bool = False,
) -> dict[str, Any]:
    """Ownership after a create/update/patch by ``manager``: it takes every field it changed."""
    scope = "status" if subresource == "status" else ""
    entries = _entries(old)
    before = leaves(tracked(old or {}, scope, split_status))
    after = leaves(tracked(new, scope, split_status))
    before.pop((), None)
    after.pop((), None)
    changed = {p for p, v in after.items() if before.get(p, _MISSING) != v}
    for entry in entries:
        if entry.subresource == subresource:
            entry.fields -= changed
            entry.fields &= after.keys()
    mine = _Entry(
        {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": now_rfc3339(),
            **({"subresource": subresource} if subresource else {}),
        }
    )
    mine_id = mine.identity()
    previous = next((e.fields for e in entries if e.identity() == mine_id), set())
    mine.fields = (previous & after.keys()) | changed
    return _with_entries(copy.deepcopy(new), _upsert(entries, mine))


_MISSING = object()
