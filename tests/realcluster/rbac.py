"""The restricted `wizard` user's RBAC, made from the permissions gpu-wizard itself documents.

`wizard.cluster.core.preflight.permissions(plan, namespace)` is the list preflight asks the API server about
(and the README's permission table); the union over every mode's plan becomes one ClusterRole (the
cluster-wide entries) and one Role in the operator namespace (the namespaced ones). Nothing is added
by hand: when a wizard command needs a verb this list lacks, the real API server answers 403 and the
lane fails, which is the point.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from wizard.cluster.core.preflight import Permission, permissions
from wizard.engine.answers import parse_answers
from wizard.engine.plan import Plan

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"
RBAC = "rbac.authorization.k8s.io"


def every_mode_plan() -> list[Plan]:
    plans = []
    for answers in sorted(EXAMPLES.glob("*.answers.yaml")):
        text = answers.read_text()
        plans.append(parse_answers(text, str(answers))[0])
        if "useNvidiaDriverCRD: false" in text:
            plans.append(
                parse_answers(text.replace("useNvidiaDriverCRD: false", "useNvidiaDriverCRD: true"), str(answers))[0]
            )
    return plans


def documented_permissions(namespace: str) -> list[Permission]:
    found: dict[tuple[str, str, str, str, str], Permission] = {}
    for plan in [None, *every_mode_plan()]:
        for p in permissions(plan, namespace):
            found[(p.verb, p.group, p.resource, p.subresource, p.namespace)] = p
    return list(found.values())


def _rules(perms: list[Permission]) -> list[dict[str, Any]]:
    verbs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for p in perms:
        resource = f"{p.resource}/{p.subresource}" if p.subresource else p.resource
        verbs[(p.group, resource)].add(p.verb)
    return [
        {"apiGroups": [group], "resources": [resource], "verbs": sorted(v)}
        for (group, resource), v in sorted(verbs.items())
    ]


def wizard_rbac(namespace: str, user: str = "wizard") -> list[dict[str, Any]]:
    """ClusterRole + binding and Role + binding granting exactly the documented permissions."""
    perms = documented_permissions(namespace)
    subject = [{"apiGroup": RBAC, "kind": "User", "name": user}]
    meta = {"name": "gpu-wizard"}
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": meta,
            "rules": _rules([p for p in perms if not p.namespace]),
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta,
            "subjects": subject,
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "gpu-wizard"},
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {**meta, "namespace": namespace},
            "rules": _rules([p for p in perms if p.namespace]),
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {**meta, "namespace": namespace},
            "subjects": subject,
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "gpu-wizard"},
        },
    ]
