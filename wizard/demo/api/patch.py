"""PATCH bodies: JSON merge patch (RFC 7386), a strategic merge patch subset, and JSON patch (RFC 6902).

Strategic merge is what kubectl sends for built-in kinds (``kubectl label``, client-side apply). The
subset here merges lists of named items by ``name`` (containers, volumes, env...), honours
``$patch: delete|replace`` and drops the ``$setElementOrder``/``$retainKeys`` bookkeeping directives.
"""

from __future__ import annotations

import copy
from typing import Any

from wizard.demo.api.status import ApiError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _named(items: Any) -> bool:
    return isinstance(items, list) and all(isinstance(i, dict) and "name" in i for i in items)


def _strategic_list(target: list[Any], patch: list[Any]) -> list[Any]:
    if not (_named(patch) and _named(target)):
        return [strategic_merge_patch(None, item) for item in patch]
    result = [dict(item) for item in target]
    for item in patch:
        index = next((i for i, cur in enumerate(result) if cur.get("name") == item["name"]), None)
        directive = item.get("$patch")
        if directive == "delete":
            if index is not None:
                result.pop(index)
            continue
        if index is None:
            result.append(strategic_merge_patch(None, item))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch: merge patch plus keyed list merging and ``$patch`` directives."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if not k.startswith("$")}
    if directive == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _strategic_list(result[key], value)
        elif isinstance(value, list):
            result[key] = [strategic_merge_patch(None, item) for item in value]
        else:
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, list):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ApiError(
                422, f"the server rejected our request due to an error in our request: missing path {path!r}"
            )
    return node, parts[-1]


def _get(doc: Any, path: str) -> Any:
    node = doc
    for part in _pointer(path):
        try:
            node = node[int(part)] if isinstance(node, list) else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise ApiError(422, f"jsonpatch: path {path!r} not found") from None
    return node


def _remove(doc: Any, path: str) -> Any:
    parent, last = _parent(doc, _pointer(path), path)
    try:
        return parent.pop(int(last)) if isinstance(parent, list) else parent.pop(last)
    except (KeyError, IndexError, ValueError):
        raise ApiError(422, f"jsonpatch remove operation does not apply: doc is missing path: {path!r}") from None


def _add(doc: Any, path: str, value: Any, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent, last = _parent(doc, parts, path)
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if replace:
            parent[index] = copy.deepcopy(value)
        else:
            parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        if replace and last not in parent:
            raise ApiError(422, f"jsonpatch replace operation does not apply: doc is missing key: {path!r}")
        parent[last] = copy.deepcopy(value)
    else:
        raise ApiError(422, f"jsonpatch: cannot add at {path!r}")
    return doc


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 operations (add, remove, replace, move, copy, test) applied to a copy of ``target``."""
    if not isinstance(ops, list):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, op.get("value"))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            doc = _add(doc, path, op.get("value"), replace=True)
        elif kind == "move":
            doc = _add(doc, path, _remove(doc, op["from"]))
        elif kind == "copy":
            doc = _add(doc, path, _get(doc, op["from"]))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise ApiError(422, f"testing value {path} failed")
        else:
            raise bad_request(f"unexpected json patch operation {kind!r}")
    return doc
