"""Authentication and authorisation of the demo API: one bearer token, RBAC from the scenario's deny table."""

from __future__ import annotations

import hmac
import json
from typing import Any

from wizard.demo.api.status import ApiError

DEMO_USER = "gpu-wizard-demo-admin"

VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def check_token(header: str | None, token: str) -> None:
    """Raise 401 Unauthorized unless ``header`` is ``Bearer <token>``."""
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise ApiError(401, "Unauthorized")


def _matches(rule_value: str | None, actual: str) -> bool:
    return rule_value is None or rule_value == "*" or rule_value == actual


def is_denied(
    rules: list[dict[str, str]],
    verb: str,
    resource: str,
    group: str,
    subresource: str = "",
    namespace: str | None = None,
) -> bool:
    """Whether a deny rule covers this request (``resource`` may be written ``pods/exec``)."""
    full = f"{resource}/{subresource}" if subresource else resource
    for rule in rules:
        if not _matches(rule.get("verb"), verb) or not _matches(rule.get("group"), group):
            continue
        if rule.get("namespace") not in (None, "*", namespace):
            continue
        if _matches(rule.get("resource"), full) or (not subresource and _matches(rule.get("resource"), resource)):
            return True
    return False


def request_verb(method: str, has_name: bool, watch: bool) -> str:
    if method in ("GET", "HEAD"):
        if watch:
            return "watch"
        return "get" if has_name else "list"
    return VERB_BY_METHOD.get(method, method.lower())


def review(rules: list[dict[str, str]], body: dict[str, Any]) -> dict[str, Any]:
    """Answer a SelfSubjectAccessReview: the request echoed back with ``status.allowed``."""
    spec = body.get("spec") or {}
    attrs = spec.get("resourceAttributes")
    allowed = True
    if isinstance(attrs, dict):
        allowed = not is_denied(
            rules,
            attrs.get("verb", ""),
            attrs.get("resource", ""),
            attrs.get("group", ""),
            attrs.get("subresource", ""),
            attrs.get("namespace") or None,
        )
    status: dict[str, Any] = {"allowed": allowed}
    if allowed:  # RBAC gives a reason only for what it allows: a denial is just "nothing matched"
        status["reason"] = (
            f'RBAC: allowed by ClusterRoleBinding "gpu-wizard-demo" of ClusterRole "cluster-admin" to User "{DEMO_USER}"'
        )
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def forbidden(
    verb: str, plural: str, subresource: str, group: str, name: str | None, namespace: str | None
) -> ApiError:
    """The RBAC denial text of a real API server (403 Forbidden) for the demo's one user."""
    what = f"{plural} {json.dumps(name)}" if name else plural
    resource = f"{plural}/{subresource}" if subresource else plural
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return ApiError(
        403,
        f'{what} is forbidden: User "{DEMO_USER}" cannot {verb} resource "{resource}" in API group "{group}" {scope}',
        details={"name": name or "", "group": group, "kind": plural},
    )
