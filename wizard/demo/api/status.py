"""metav1.Status error bodies with the reasons and codes a real API server uses."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

REASONS: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


def status_body(
    code: int,
    message: str,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason if reason is not None else REASONS.get(code, "Unknown"),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


class ApiError(Exception):
    """An API failure that becomes a ``Status`` response."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.body = status_body(code, message, reason, details)
        self.headers = headers or {}

    def response(self) -> web.Response:
        return web.Response(
            status=self.code,
            body=json.dumps(self.body).encode(),
            content_type="application/json",
            headers=self.headers,
        )


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    """``<resource> "<name>" not found`` (404 NotFound)."""
    return ApiError(
        404,
        f'{_qualified(resource, group)} "{name}" not found',
        details={"name": name, "group": group, "kind": resource},
    )


def already_exists(resource: str, group: str, name: str) -> ApiError:
    """``<resource> "<name>" already exists`` (409 AlreadyExists)."""
    return ApiError(
        409,
        f'{_qualified(resource, group)} "{name}" already exists',
        reason="AlreadyExists",
        details={"name": name, "group": group, "kind": resource},
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    """Operation cannot be fulfilled (409 Conflict), e.g. a stale resourceVersion."""
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {why}',
        details={"name": name, "group": group, "kind": resource},
    )


def cause(reason: str, field: str, message: str) -> dict[str, str]:
    """One cause of a 422 Invalid (``FieldValueInvalid``, ``FieldValueRequired`` …)."""
    return {"reason": reason, "message": message, "field": field}


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """``<Kind>.<group> "<name>" is invalid: <field>: <message>`` (422 Invalid)."""
    summary = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    if len(causes) > 1:
        summary = "[" + summary + "]"
    return ApiError(
        422,
        f'{_qualified(kind, group)} "{name}" is invalid: {summary}',
        details={"name": name, "group": group, "kind": kind, "causes": causes},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)
