"""Errors the cluster engine raises, worded for the person at the keyboard.

Kept apart from :mod:`wizard.cluster.gateway` so that front ends can catch them without importing the
Kubernetes client. Every error carries a one-line ``message`` and a ``hint`` saying what to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_MANAGER_RE = re.compile(r'conflicts? with "([^"]+)"')


class ClusterError(Exception):
    """A cluster problem the user can fix: unreachable server, TLS, credentials, context, RBAC."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConnectionDropped(ClusterError):
    """The connection broke after a request was sent: the server may or may not have acted on it."""


class TimedOut(ClusterError):
    """No answer within the limit: for a write, the server may still carry it out later."""


class ApiError(ClusterError):
    """The API server answered with an error status (a ``metav1.Status`` body)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str = "",
        body: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message, hint)
        self.status = status
        self.reason = reason
        self.body: Mapping[str, Any] = body or {}
        self.retry_after = retry_after

    @classmethod
    def from_response(
        cls, status: int, raw: bytes, headers: Mapping[str, str], what: str, *, hint: str = ""
    ) -> ApiError:
        """Build the error from a response: the Status message when there is one, else the raw text."""
        body: dict[str, Any] = {}
        try:
            decoded = json.loads(raw) if raw else {}
            if isinstance(decoded, dict):
                body = decoded
        except ValueError:
            pass
        detail = str(body.get("message") or raw[:200].decode("utf-8", "replace").strip() or f"HTTP {status}")
        from wizard.retry import retry_after_seconds  # errors stays importable without aiohttp

        return cls(
            status,
            f"{what}: {detail}",
            reason=str(body.get("reason") or ""),
            body=body,
            retry_after=retry_after_seconds(headers),
            hint=hint,
        )

    @property
    def causes(self) -> list[dict[str, Any]]:
        """``details.causes`` of the Status body (field errors, field-manager conflicts)."""
        details = self.body.get("details") or {}
        causes = details.get("causes") or []
        return [c for c in causes if isinstance(c, dict)]

    @property
    def field_managers(self) -> list[str]:
        """The other field managers named by a server-side-apply conflict (409), in order."""
        names: list[str] = []
        texts = [str(c.get("message") or "") for c in self.causes] + [self.message]
        for text in texts:
            for name in _MANAGER_RE.findall(text):
                if name not in names:
                    names.append(name)
        return names
