"""The API server's own validation of pod specs inside built-in objects, where it differs from a schema.

A real kube-apiserver rejects a ``matchFields`` requirement listing more than one value for ``In``/``NotIn``; the
demo once accepted it and the wizard's host probe relied on it, until the real-cluster lane found it.
"""

from __future__ import annotations

from typing import Any

from wizard.demo.api.status import cause

_TEMPLATE_PATHS = {
    "pods": ("spec",),
    "daemonsets": ("spec", "template", "spec"),
    "deployments": ("spec", "template", "spec"),
    "replicasets": ("spec", "template", "spec"),
    "jobs": ("spec", "template", "spec"),
}


def pod_spec_causes(plural: str, obj: dict[str, Any]) -> list[dict[str, str]]:
    """The 422 causes (reason, field, message) of `obj`'s pod spec; empty when it is valid."""
    path = _TEMPLATE_PATHS.get(plural)
    if path is None:
        return []
    spec: Any = obj
    for key in path:
        spec = spec.get(key) if isinstance(spec, dict) else None
    if not isinstance(spec, dict):
        return []
    where = ".".join(path) + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    causes = []
    for t, term in enumerate((affinity or {}).get("nodeSelectorTerms") or []):
        for f, field in enumerate((term or {}).get("matchFields") or []):
            at = f"{where}.nodeSelectorTerms[{t}].matchFields[{f}]"
            if field.get("key") != "metadata.name":
                causes.append(
                    cause(
                        "FieldValueInvalid",
                        f"{at}.key",
                        f'Invalid value: "{field.get("key")}": not a valid field selector key',
                    )
                )
            elif field.get("operator") in ("In", "NotIn") and len(field.get("values") or []) != 1:
                message = (
                    "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
                )
                causes.append(cause("FieldValueRequired", f"{at}.values", message))
    return causes
