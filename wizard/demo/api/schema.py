"""Structural-schema checks for custom resources, as the API server runs them against a CRD's schema."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


@dataclass
class SchemaReport:
    """What one check found: the pruned object, undeclared field paths and validation causes."""

    obj: dict[str, Any]
    unknown: list[str] = field(default_factory=list)
    causes: list[dict[str, str]] = field(default_factory=list)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def _shown(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else _type_name(value)


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    expected = schema.get("type")
    if not expected:
        return True
    if isinstance(value, bool) and expected in ("integer", "number"):
        return False
    return isinstance(value, _TYPES.get(expected, (object,)))


class _Walker:
    def __init__(self, report: SchemaReport, defaults: bool) -> None:
        self.report = report
        self.defaults = defaults

    def cause(self, reason: str, path: str, message: str) -> None:
        self.report.causes.append({"reason": reason, "message": f"{message}", "field": path})

    def walk(self, value: Any, schema: dict[str, Any], path: str) -> Any:
        """Validate ``value`` at ``path``; return it with undeclared fields pruned."""
        if not _type_ok(value, schema):
            expected = "integer or string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
            self.cause(
                "FieldValueTypeInvalid",
                path,
                f"Invalid value: {_shown(value)}: {path} in body must be of type {expected}: {_shown(value)}",
            )
            return value
        if "enum" in schema and value not in schema["enum"]:
            allowed = ", ".join(json.dumps(v) for v in schema["enum"])
            self.cause(
                "FieldValueNotSupported", path, f"Unsupported value: {json.dumps(value)}: supported values: {allowed}"
            )
        if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
            self.cause(
                "FieldValueInvalid",
                path,
                f"Invalid value: {json.dumps(value)}: {path} in body should match '{schema['pattern']}'",
            )
        if isinstance(value, dict):
            return self.walk_object(value, schema, path)
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            return [self.walk(item, schema["items"], f"{path}[{i}]") for i, item in enumerate(value)]
        return value

    def walk_object(self, value: dict[str, Any], schema: dict[str, Any], path: str) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = f"{path}.{key}" if path else key
            if item is None and not (props.get(key) or {}).get("nullable"):
                continue  # the API server drops nulls of non-nullable fields before validating
            if key in props:
                out[key] = self.walk(item, props[key], sub)
            elif isinstance(extra, dict):
                out[key] = self.walk(item, extra, sub)
            elif extra is True or preserve:
                out[key] = item
            else:
                self.report.unknown.append(sub)
        if self.defaults:  # structural defaulting: an absent field with a default gets it before validation
            for key, sub_schema in props.items():
                if key not in out and isinstance(sub_schema, dict) and "default" in sub_schema:
                    out[key] = self.walk(
                        copy.deepcopy(sub_schema["default"]), sub_schema, f"{path}.{key}" if path else key
                    )
        for key in schema.get("required") or []:
            if key not in out:
                sub = f"{path}.{key}" if path else key
                self.cause("FieldValueRequired", sub, "Required value")
        return out


def check_object(obj: dict[str, Any], schema: dict[str, Any], *, defaults: bool = True) -> SchemaReport:
    """Prune, default and validate a custom resource against its CRD's ``openAPIV3Schema``."""
    report = SchemaReport(obj={})
    walker = _Walker(report, defaults)
    props: dict[str, Any] = schema.get("properties") or {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            report.obj[key] = value
        elif value is None:
            continue
        elif key in props:
            report.obj[key] = walker.walk(value, props[key], key)
        elif schema.get("x-kubernetes-preserve-unknown-fields"):
            report.obj[key] = value
        else:
            report.unknown.append(key)
    for key in schema.get("required") or []:
        if key not in report.obj:
            walker.cause("FieldValueRequired", key, "Required value")
    return report
