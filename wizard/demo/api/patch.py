"""PATCH bodies: JSON merge patch (RFC 7386), a strategic merge patch subset, and JSON patch (RFC 6902).

The two RFC formats are the ``json-merge-patch`` and ``jsonpatch`` libraries; the strategic merge subset is ours.

Strategic merge is what kubectl sends for built-in kinds (``kubectl label``, client-side apply). The
subset here merges lists of named items by ``name`` (containers, volumes, env...), honours
``$patch: delete|replace`` and drops the ``$setElementOrder``/``$retainKeys`` bookkeeping directives.
"""

from __future__ import annotations

import copy
from typing import Any

import json_merge_patch
import jsonpatch
import jsonpointer

from wizard.demo.api.status import ApiError, bad_request


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: maps merge recursively, ``null`` deletes, anything else replaces (``target`` is not changed)."""
    return json_merge_patch.merge(copy.deepcopy(target), copy.deepcopy(patch))


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


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902 operations (add, remove, replace, move, copy, test) applied to a copy of ``target``."""
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:  # one at a time, to say which operation failed
        path = str(op.get("path", ""))
        try:
            doc = jsonpatch.apply_patch(doc, [op], in_place=True)
        except jsonpatch.InvalidJsonPatch as exc:
            raise bad_request(f"invalid json patch operation at {path!r}: {exc}") from None
        except jsonpatch.JsonPatchTestFailed:
            raise ApiError(422, f"testing value {path} failed") from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            # The library's message may quote the whole object: name only the operation and its path.
            raise ApiError(
                422, f"jsonpatch {op.get('op')} operation does not apply at {path!r} ({type(exc).__name__})"
            ) from None
    return doc
