"""The gateway's exec: a command run in a container over the websocket exec API, its lines streamed.

Every exec is a websocket of its own (a TCP connection, a TLS handshake and an HTTP upgrade: the
protocol allows no sharing), so the request around it is kept lean: the URL and headers are built
here (:func:`wizard.cluster.transport.exec_url`), not by the generated API, whose argument validation
and serialisation cost as much client CPU as the rest of the request; the websocket session and its TLS
context are made once and reused. The credential header comes from the client's own auth settings
(refreshed by its hook, as the generated API would).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp

from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway.base import GatewayBase
from wizard.cluster.gateway.kube import WsApiClient
from wizard.cluster.transport import EXEC_PROTOCOL, ExecOutput, ExecResult, exec_url, websocket_base
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
        on_line: Callable[[str, str], None] | None = None,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run a command in a container over the websocket exec API.

        ``on_line(stream, line)`` is called for each complete stdout/stderr line as it arrives, so a
        front end can show the output live. The whole exec is bounded by ``timeout``. A handshake the
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
                return await self._exec_once(namespace, pod, container, command, ExecOutput(on_line))
            except aiohttp.WSServerHandshakeError as exc:
                refused = ApiError(exc.status, f"{what}: refused by the server (HTTP {exc.status})")
                if retryable_status(exc.status, safe=True):  # refused before the command started
                    raise Retryable(refused) from None
                raise refused from None

        try:
            async with asyncio.timeout(limit):
                return await retrying(EXEC, attempt, stats=self.stats)
        except (TimeoutError, aiohttp.ClientError, *DROPS) as exc:
            raise self._transport_error(exc, what, limit) from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ClusterError(f"{what}: unreadable exec status ({exc})") from None

    async def _exec_once(
        self, namespace: str, pod: str, container: str, command: list[str], output: ExecOutput
    ) -> ExecResult:
        session = self._session()
        headers = {**self._exec_headers, **await self._auth_headers()}
        url = exec_url(self._ws_base, namespace, pod, container, command)
        proxy = self.configuration.proxy or None
        async with session.ws_connect(url, headers=headers, proxy=proxy, proxy_headers=self._proxy_headers) as ws:
            async for message in ws:
                if isinstance(message.data, bytes | str):
                    output.frame(message.data)
        return output.result()

    def _session(self) -> aiohttp.ClientSession:
        """The websocket session (its TLS context made once, on the first exec) and what every request shares."""
        if self._ws is None:
            self._ws = WsApiClient(configuration=self.configuration)
            self._ws_base = websocket_base(self.configuration.host)
            headers = {**self.api.default_headers, "Accept": "*/*", "sec-websocket-protocol": EXEC_PROTOCOL}
            if self.api.cookie:
                headers["Cookie"] = str(self.api.cookie)
            self._exec_headers: dict[str, str] = headers
            self._proxy_headers = self.configuration.proxy_headers or None
        rest = self._ws.rest_client
        if rest.pool_manager is None:
            rest.pool_manager = rest._create_pool_manager()
        session: aiohttp.ClientSession = rest.pool_manager
        return session

    async def _auth_headers(self) -> dict[str, str]:
        """The credential headers the generated API would send (refreshed by the client's hook, if any)."""
        settings: dict[str, Any] = dict(await self.configuration.auth_settings())
        return {str(s["key"]): str(s["value"]) for s in settings.values() if s.get("in") == "header" and s.get("value")}
