"""Validate a ClusterPolicy or NVIDIADriver against its operator release's real CRD schema.

The CRD's ``openAPIV3Schema`` is a Kubernetes *structural* schema, not plain JSON Schema. Before
handing it to ``jsonschema`` we make it behave like the API server with strict field validation:
unknown fields are errors (the server would prune them silently, hiding a typo or a field the
release does not have), ``x-kubernetes-int-or-string`` accepts both types, ``nullable`` accepts
null, and ``default`` values are filled in first (the server defaults before it validates, so a
``required`` field with a default is not missing). The one non-transition CEL rule of the bundled
CRDs is evaluated by hand; transition rules (``oldSelf``) cannot apply to a new object.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from wizard.bundled import operator_crd

#: kind -> CRD plural, for the custom resources the wizard renders.
CRD_PLURALS: dict[str, str] = {"ClusterPolicy": "clusterpolicies", "NVIDIADriver": "nvidiadrivers"}

_Rule = Callable[[Mapping[str, Any]], bool]

# CEL rules of the bundled CRDs, written out in Python (keyed by the rule's exact text).
_CEL_RULES: dict[str, _Rule] = {
    "has(self.default) && self.default ? !has(self.nodeSelector) || size(self.nodeSelector) == 0 : true": (
        lambda spec: not (spec.get("default") is True and spec.get("nodeSelector"))
    ),
}


def _strict(schema: Any) -> Any:
    """A copy of a structural schema turned into JSON Schema with the API server's strictness."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _strict(value) for key, value in schema.items() if key != "x-kubernetes-validations"}
    if out.pop("x-kubernetes-int-or-string", False) and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.pop("nullable", False) and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    preserve = out.pop("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in out and "additionalProperties" not in out and not preserve:
        out["additionalProperties"] = False
    return out


@cache
def _version_schema(bundle: str, plural: str, version: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(raw structural schema, strict JSON Schema) of one served version of a CRD, or None."""
    crd = operator_crd(bundle, plural)
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            raw = entry["schema"]["openAPIV3Schema"]
            return raw, _strict(raw)
    return None


def _apply_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """Fill in schema defaults the way the API server does before validation (returns a copy).

    As the API server does first, a null field is dropped unless its schema says ``nullable: true`` (then its
    default, if any, applies): the chart of one release renders ``migManager.config.name: null``, which the
    server accepts."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key) or (extra if isinstance(extra, Mapping) else {})
            if item is None and not sub.get("nullable"):
                continue
            out[key] = _apply_defaults(item, sub)
        for key, sub in props.items():
            if key not in out and "default" in sub:
                out[key] = _apply_defaults(copy.deepcopy(sub["default"]), sub)
        return out
    if isinstance(value, list):
        items = schema.get("items") or {}
        return [_apply_defaults(item, items) for item in value]
    return value


def _path_text(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(object)"


def _cel_errors(value: Any, schema: Mapping[str, Any], path: tuple[Any, ...]) -> list[str]:
    """Evaluate the known non-transition CEL rules along the object."""
    errors: list[str] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        check = _CEL_RULES.get(rule.get("rule", ""))
        if check is not None and isinstance(value, Mapping) and not check(value):
            errors.append(f"{_path_text(path)}: {rule.get('message') or rule['rule']}")
    if isinstance(value, Mapping):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                errors.extend(_cel_errors(value[key], sub, (*path, key)))
    return errors


def validate_against_crd(obj: Mapping[str, Any], bundle: str) -> list[str]:
    """Errors of ``obj`` against the CRD of operator release ``bundle`` (a folder of ``assets/operator/``); empty when valid.

    Each message starts with the field path (``spec.driver.version: ...``). The kind picks the CRD
    and ``apiVersion`` its served version; an unknown kind or version is reported, not raised.
    """
    import jsonschema  # a test/preflight dependency, loaded only when validating

    kind = str(obj.get("kind", ""))
    plural = CRD_PLURALS.get(kind)
    if plural is None:
        return [f"kind: {kind!r} is not a CRD gpu-wizard renders; valid: {', '.join(CRD_PLURALS)}"]
    api_version = str(obj.get("apiVersion", ""))
    group, _, version = api_version.partition("/")
    schemas = _version_schema(bundle, plural, version) if group == "nvidia.com" else None
    if schemas is None:
        served = [f"nvidia.com/{v['name']}" for v in operator_crd(bundle, plural)["spec"]["versions"]]
        return [f"apiVersion: {api_version!r} is not served for {kind} in {bundle}; valid: {', '.join(served)}"]
    raw, strict = schemas
    defaulted = _apply_defaults(dict(obj), raw)
    validator = jsonschema.Draft7Validator(strict)
    errors = sorted(validator.iter_errors(defaulted), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    messages = [f"{_path_text(e.absolute_path)}: {e.message}" for e in errors]
    return messages + _cel_errors(defaulted, raw, ())
