"""The gateway's exec: a command run in a container over the websocket exec API, its lines streamed.

The websocket is aiohttp's (``ws_connect``), on a session of the gateway's own made on the first exec: the
Kubernetes client's TLS context (CA, client certificate, verification on or off), the cluster's
``tls-server-name``, the kubeconfig's proxy (else the environment's, looked up once) by HTTP CONNECT with
the credentials of its URL, and the credential header from the client's own auth settings (refreshed by
its hook, as the generated API would). The URL is built here (:func:`wizard.cluster.access.transport.exec_target`),
not by the generated API, whose argument validation and serialisation cost as much client CPU as the rest
of the request. Every exec is a connection of its own (the exec protocol shares none); the session's
connector caches the server's addresses and races them (RFC 8305).
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
import yarl

from wizard import requestlog
from wizard.cluster.access.transport import EXEC_PROTOCOL, ExecOutput, ExecResult, env_proxy, exec_target, shown_proxy
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway.base import GatewayBase
from wizard.cluster.gateway.tls_resume import ResumingTLS
from wizard.retry import DROPS, EXEC, Retryable, retryable_status, retrying

SHOWN_COMMAND = 48
"""Characters of an exec's command quoted in an error (the verification scripts are long)."""
REFUSAL_BODY_MAX = 64 * 1024
"""The most of a refused upgrade's body read (its Status says why; the rest is not read)."""
MAX_MESSAGE = 16 * 1024 * 1024
"""Bytes of one websocket message: an exec's output frame is far smaller."""
_DATA = (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT)
_WS_TIMEOUT = aiohttp.ClientWSTimeout(ws_receive=None, ws_close=1.0)
"""The exec's own timeout bounds the reads; the client closes first only after a failure or a timeout (a
server that answers no close frame within a second is not waited for)."""


class ExecRefused(Exception):
    """The server answered the upgrade with another status than 101 (the command never started); ``body``
    is its ``metav1.Status`` (RBAC's "cannot create resource pods/exec", an unreachable kubelet), ``headers``
    its headers (a 429's ``Retry-After``)."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.headers, self.body = status, headers, body


class ProtocolViolation(Exception):
    """The server's answer is no exec websocket (said how)."""


class _ExecResponse(aiohttp.ClientResponse):
    """An exec's answer: one other than the upgrade's 101 is raised with its body, which ``ws_connect``
    would drop unread (the server's reason is in it)."""

    async def start(self, connection: Any) -> aiohttp.ClientResponse:
        await super().start(connection)
        if self.status != 101:
            body = b""
            while len(body) < REFUSAL_BODY_MAX and (chunk := await self.content.read(REFUSAL_BODY_MAX - len(body))):
                body += chunk
            raise ExecRefused(self.status, self.headers, body)
        return self


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
        proxy = self.configuration.proxy or self._environment_proxy

        async def attempt() -> ExecResult:
            self.stats.requests += 1
            try:
                return await self._exec_once(exec_target(namespace, pod, container, command), proxy, on_lines)
            except ExecRefused as exc:
                refused = self._refusal(exc, what, namespace)
                if retryable_status(exc.status, safe=True):  # refused before the command started
                    raise Retryable(refused, retry_after=refused.retry_after) from None
                raise refused from None

        if proxy and urllib.parse.urlsplit(proxy).scheme != "http":
            raise ClusterError(
                f"context {self.context!r}: proxy {shown_proxy(proxy)}: only http:// proxies (HTTP CONNECT) carry execs",
                "fix the kubeconfig",
            )
        try:
            async with asyncio.timeout(limit):
                return await retrying(EXEC, attempt, stats=self.stats)
        except aiohttp.ClientHttpProxyError as exc:
            raise ClusterError(
                f"{what}: the proxy {shown_proxy(proxy)} refused the tunnel to {self.server} (HTTP {exc.status})",
                "check the proxy's address and credentials (the kubeconfig's proxy-url, or HTTPS_PROXY)",
            ) from None
        except (ProtocolViolation, aiohttp.WSServerHandshakeError, aiohttp.WebSocketError) as exc:
            said = exc.message if isinstance(exc, aiohttp.WSServerHandshakeError) else exc
            raise ClusterError(
                f"{what}: the server's websocket answer is not valid ({said})",
                "a proxy or load balancer in front of the API server may not pass websockets through",
            ) from None
        except (TimeoutError, ssl.SSLError, aiohttp.ClientError, *DROPS) as exc:
            raise self._transport_error(exc, what, limit) from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ClusterError(f"{what}: unreadable exec status ({exc})") from None

    def _refusal(self, exc: ExecRefused, what: str, namespace: str) -> ApiError:
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
        self, target: str, proxy: str, on_lines: Callable[[str, list[str]], None] | None
    ) -> ExecResult:
        url = self.server.rstrip("/") + target
        output, started, status = ExecOutput(on_lines), time.monotonic(), "dropped"
        try:
            async with self._exec_session().ws_connect(
                yarl.URL(url, encoded=True),  # quoted once by exec_target, sent as it is
                protocols=(EXEC_PROTOCOL,),
                headers=await self._auth_headers(),
                proxy=proxy or None,
                proxy_headers=self.configuration.proxy_headers or None,
                server_hostname=self.configuration.tls_server_name or None,
                max_msg_size=MAX_MESSAGE,
                decode_text=False,
                timeout=_WS_TIMEOUT,
            ) as ws:
                status = "101"
                if ws.protocol != EXEC_PROTOCOL:  # without it the frames carry no exit status to read
                    raise ProtocolViolation(
                        f"the server agreed to exec protocol {ws.protocol or 'none'!r}, not {EXEC_PROTOCOL}"
                    )
                while (message := await ws.receive()).type in _DATA:
                    output.frame(message.data)
                if message.type is aiohttp.WSMsgType.ERROR and isinstance(message.data, aiohttp.WebSocketError):
                    raise message.data
        except ExecRefused as exc:
            status = str(exc.status)
            raise
        finally:
            if requestlog.enabled():
                requestlog.record("api", "GET", url, status, started)
        # The connection ended without the server's close frame and before the exit status: the outcome is unknown.
        if message.type is not aiohttp.WSMsgType.CLOSE and output.exit_code is None:
            raise aiohttp.ServerDisconnectedError()
        return output.result()

    @functools.cached_property
    def _environment_proxy(self) -> str:
        """The environment's proxy for the server, looked up once (it walks the whole environment)."""
        return env_proxy(self.server)

    def _exec_session(self) -> aiohttp.ClientSession:
        """The execs' session (made on the first): the client's TLS context, its User-Agent and cookie. It never
        reads the environment per request (a proxy and .netrc lookup each): the proxy is the caller's."""
        if self._execs is None:
            headers = dict(self.api.default_headers)
            if self.api.cookie:
                headers["Cookie"] = str(self.api.cookie)
            context = self.api.rest_client.ssl_context
            context.sslobject_class = ResumingTLS  # the client's own connections resume too (they are few, kept alive)
            connector = aiohttp.TCPConnector(ssl=context, limit=0)
            self._execs = aiohttp.ClientSession(
                connector=connector,
                response_class=_ExecResponse,
                cookie_jar=aiohttp.DummyCookieJar(),  # the kubeconfig's cookie is a header: no jar to look up
                headers=headers,
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),  # the exec's own timeout bounds it
            )
        return self._execs

    async def _auth_headers(self) -> dict[str, str]:
        """The credential headers the generated API would send (refreshed by the client's hook, if any)."""
        settings: dict[str, Any] = dict(await self.configuration.auth_settings())
        return {str(s["key"]): str(s["value"]) for s in settings.values() if s.get("in") == "header" and s.get("value")}
