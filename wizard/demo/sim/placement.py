"""Which nodes a pod may run on, as the scheduler and the DaemonSet controller decide."""

from __future__ import annotations

from typing import Any

from wizard.demo.sim.simutil import labels_of

#: Tolerations the DaemonSet controller adds to every pod it creates.
DS_TOLERATIONS = [
    {"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": effect}
    for taint, effect in (
        ("not-ready", "NoExecute"),
        ("unreachable", "NoExecute"),
        ("disk-pressure", "NoSchedule"),
        ("memory-pressure", "NoSchedule"),
        ("pid-pressure", "NoSchedule"),
        ("unschedulable", "NoSchedule"),
    )
]


def matches(labels: dict[str, str], selector: dict[str, str]) -> bool:
    """A nodeSelector matches when every key has exactly that value."""
    return all(labels.get(k) == v for k, v in selector.items())


def _term_fits(node: dict[str, Any], term: dict[str, Any]) -> bool:
    """One nodeSelectorTerm: every matchExpression (labels) and matchField (``metadata.name``) holds."""
    labels = labels_of(node)
    fields = {"metadata.name": node["metadata"]["name"]}
    for source, exprs in ((labels, term.get("matchExpressions")), (fields, term.get("matchFields"))):
        for expr in exprs or []:
            key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
            present = key in source
            if op == "In" and not (present and source[key] in values):
                return False
            if op == "NotIn" and present and source[key] in values:
                return False
            if op == "Exists" and not present:
                return False
            if op == "DoesNotExist" and present:
                return False
    return True


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol.get("effect") != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def fits(node: dict[str, Any], pod_spec: dict[str, Any]) -> bool:
    """Whether a pod with ``pod_spec`` may run on ``node``: nodeSelector, required node affinity
    (any term; a term's field index is built once per call), NoSchedule/NoExecute taints tolerated."""
    if not matches(labels_of(node), pod_spec.get("nodeSelector") or {}):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms and not any(_term_fits(node, term) for term in terms):
        return False
    tolerations = list(pod_spec.get("tolerations") or [])
    return all(
        _tolerates(tolerations, taint)
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _by_name(term: dict[str, Any]) -> str | None:
    """The node a term names, when it is nothing but ``metadata.name In [one name]``."""
    fields = term.get("matchFields") or []
    if term.get("matchExpressions") or len(fields) != 1:
        return None
    only = fields[0]
    values = only.get("values") or []
    if only.get("key") != "metadata.name" or only.get("operator") != "In" or len(values) != 1:
        return None
    return str(values[0])


def _indexed(spec: dict[str, Any]) -> dict[str, Any]:
    """A pod spec whose terms that each name one node become one term holding the set of names (terms are
    ORed, so it is the same rule): 5,000 one-node terms are looked up once per node, not walked."""
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return spec
    names = frozenset(n for n in map(_by_name, terms) if n is not None)
    kept = [t for t in terms if _by_name(t) is None]
    if names:
        kept.append({"matchFields": [{"key": "metadata.name", "operator": "In", "values": names}]})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": kept}}}
    return {**spec, "affinity": affinity}


def eligible_nodes(ds: dict[str, Any], nodes: list[dict[str, Any]]) -> frozenset[str]:
    """The nodes a DaemonSet's pods may run on (its template against each node, with the controller's tolerations)."""
    pod_spec = _indexed(ds["spec"]["template"].get("spec") or {})
    pod_spec = {**pod_spec, "tolerations": list(pod_spec.get("tolerations") or []) + DS_TOLERATIONS}
    return frozenset(n["metadata"]["name"] for n in nodes if fits(n, pod_spec))
