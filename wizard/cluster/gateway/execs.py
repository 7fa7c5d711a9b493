"""The gateway's exec: a command run in a container over the websocket exec API, its lines streamed.

Every exec is a websocket of its own (a TCP connection, a TLS handshake and an HTTP upgrade: the
protocol allows no sharing), so the request around it is kept lean: the URL is built here
(:func:`wizard.cluster.transport.exec_target`), not by the generated API, whose argument validation and
serialisation cost as much client CPU as the rest of the request, and the websocket is the gateway's own
(:mod:`wizard.cluster.gateway.websocket`: over the Kubernetes client's TLS context and the kubeconfig's
proxy, its TLS session resumed from one exec to the next). The credential header comes from the client's
own auth settings (refreshed by its hook, as the generated API would).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from wizard import requestlog
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway.base import GatewayBase
from wizard.cluster.gateway.websocket import Dialer
from wizard.cluster.gateway.wsframes import HandshakeRefused, ProtocolViolation, ProxyRefused
from wizard.cluster.transport import (
    EXEC_PROTOCOL,
    ConnectFailed,
    ExecOutput,
    ExecResult,
    env_proxy,
    exec_target,
    shown_proxy,
)
from wizard.retry import DROPS, EXEC, Retryable, retryable_status, retrying

SHOWN_COMMAND = 48
"""Characters of an exec's command quoted in an error (the verification scripts are long)."""


class Execs(GatewayBase):
    """Commands in containers."""

    async def exec(
        self,
        namespace: str,
        pod: str,
        container: str,
        command: list[str],
        *,
        on_lines: Callable[[str, list[str]], None] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run a command in a container over the websocket exec API.

        ``on_lines(stream, lines)`` is called with the complete stdout/stderr lines of each frame as it
        arrives, so a front end can show the output live. The whole exec is bounded by ``timeout``. A handshake the
        server refuses with 429 or 5xx (kubelet unreachable, throttled) is retried: the command never ran.
        """
        limit = timeout or self.timeout
        shown = " ".join(command)
        if len(shown) > SHOWN_COMMAND:
            shown = shown[: SHOWN_COMMAND - 1] + "…"
        what = f"exec {shown} in {namespace}/{pod} ({container})"

        async def attempt() -> ExecResult:
            self.stats.requests += 1
            try:
                return await self._exec_once(namespace, pod, container, command, ExecOutput(on_lines))
            except HandshakeRefused as exc:
                refused = self._refusal(exc, what, namespace)
                if retryable_status(exc.status, safe=True):  # refused before the command started
                    raise Retryable(refused) from None
                raise refused from None

        try:
            async with asyncio.timeout(limit):
                return await retrying(EXEC, attempt, stats=self.stats)
        except ProxyRefused as exc:
            raise ClusterError(
                f"{what}: the proxy {shown_proxy(self.configuration.proxy or env_proxy(self.server))} refused the tunnel to "
                f"{self.server} ({exc})",
                "check the proxy's address and credentials (the kubeconfig's proxy-url, or HTTPS_PROXY)",
            ) from None
        except ProtocolViolation as exc:
            raise ClusterError(
                f"{what}: the server's websocket answer is not valid ({exc})",
                "a proxy or load balancer in front of the API server may not pass websockets through",
            ) from None
        except (TimeoutError, ConnectFailed, ssl.SSLError, aiohttp.ClientError, *DROPS) as exc:
            raise self._transport_error(exc, what, limit) from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ClusterError(f"{what}: unreadable exec status ({exc})") from None

    def _refusal(self, exc: HandshakeRefused, what: str, namespace: str) -> ApiError:
        """A refused upgrade as the user reads it: the status, the server's reason, the hint of that status
        (a 5xx keeps none: the caller knows it is the kubelet). A 403 names the two verbs an exec needs: a
        real server that denies the websocket's `create` check says only ``pods "x" is forbidden: ``."""
        said = f"{what}: refused by the server (HTTP {exc.status})"
        error = self._status_error(exc.status, exc.body, exc.headers, said)
        if not exc.body.strip():
            error.message = said
        if exc.status == 403:
            error.message = (
                f"{error.message.rstrip(': ')}; an exec needs get and create on pods/exec in namespace {namespace}"
            )
        if exc.status >= 500:
            error.hint = ""
        return error

    async def _exec_once(
        self, namespace: str, pod: str, container: str, command: list[str], output: ExecOutput
    ) -> ExecResult:
        dialer = self._dialer()
        target = exec_target(namespace, pod, container, command)
        started, status = time.monotonic(), "dropped"
        try:
            closed = await dialer.run(target, await self._auth_headers(), output.frame)
            status = "101"
        finally:
            if requestlog.enabled():
                requestlog.record("api", "GET", self.configuration.host.rstrip("/") + target, status, started)
        if not closed and output.exit_code is None:  # the connection ended mid-stream: the outcome is unknown
            raise aiohttp.ServerDisconnectedError()
        return output.result()

    def _dialer(self) -> Dialer:
        """The websockets' dialer (made on the first exec): the API server's address, the client's TLS
        context, the proxy, and the headers every upgrade request shares."""
        if self._execs is None:
            headers = {**self.api.default_headers, "Accept": "*/*"}
            if self.api.cookie:
                headers["Cookie"] = str(self.api.cookie)
            try:
                self._execs = Dialer(
                    self.configuration.host,
                    self.api.rest_client.ssl_context,
                    server_name=self.configuration.tls_server_name or "",
                    proxy=self.configuration.proxy or env_proxy(self.configuration.host),
                    proxy_headers=dict(self.configuration.proxy_headers or {}),
                    headers=headers,
                    protocol=EXEC_PROTOCOL,
                )
            except ValueError as exc:
                raise ClusterError(f"context {self.context!r}: {exc}", "fix the kubeconfig") from None
        return self._execs

    async def _auth_headers(self) -> dict[str, str]:
        """The credential headers the generated API would send (refreshed by the client's hook, if any)."""
        settings: dict[str, Any] = dict(await self.configuration.auth_settings())
        return {str(s["key"]): str(s["value"]) for s in settings.values() if s.get("in") == "header" and s.get("value")}
