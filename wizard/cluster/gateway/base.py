"""The gateway's foundation: one authenticated connection to an API server and the one request path.

:class:`GatewayBase` holds the configuration, the generated API objects (``*_without_preload_content``
calls: plain JSON, never thousands of pydantic models) and :meth:`~GatewayBase.call`, through which
every request goes: bounded by a timeout, retried by the policy of :mod:`wizard.retry` (safe calls on
5xx and dropped connections, any call on 429, ``Retry-After`` honoured), counted in ``stats``, written
to the request log (:mod:`wizard.requestlog`), its errors worded for the user (:mod:`wizard.cluster.access.transport`). The reads, writes, watches and execs
build on it (:mod:`wizard.cluster.gateway`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp

from wizard import requestlog
from wizard.cluster.access.transport import env_proxy, status_error, transport_error
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway.kube import client
from wizard.engine.results import CallStats
from wizard.retry import API_CALL, DROPS, Retryable, dropped, retryable_status, retrying

DEFAULT_TIMEOUT = 10.0
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
FIELD_MANAGER = "gpu-wizard"


class GatewayBase:
    """An authenticated connection to one API server and its request path (see :class:`wizard.cluster.gateway.Gateway`)."""

    def __init__(self, configuration: client.Configuration, *, context: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 128)
        if not configuration.proxy and not env_proxy(configuration.host):
            # The client's session trusts the environment, which costs a proxy and .netrc lookup on every
            # request it sends (~0.7 ms each: reads, writes, watches). With no proxy for this server, skip it.
            # (Execs have a session of their own that never trusts it: :mod:`wizard.cluster.gateway.execs`.)
            configuration.client_session_kwargs = {**(configuration.client_session_kwargs or {}), "trust_env": False}
        self.configuration = configuration
        self.context = context
        self.server: str = configuration.host
        self.timeout = timeout
        self.api = client.ApiClient(configuration)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.authz = client.AuthorizationV1Api(self.api)
        self.versions = client.VersionApi(self.api)
        self._execs: aiohttp.ClientSession | None = None
        """The session of execs' websockets (:mod:`wizard.cluster.gateway.execs`), made on the first one."""
        self.stats = CallStats()
        """Requests sent (every attempt) and retries made, for fault reports."""

    async def close(self) -> None:
        """Close the HTTP sessions (the API client's and the execs')."""
        if self._execs is not None:
            await self._execs.close()
        await self.api.close()

    def _transport_error(self, exc: BaseException, what: str, timeout: float) -> ClusterError:
        return transport_error(exc, what, self.server, timeout)

    def _status_error(self, status: int, raw: bytes, headers: Mapping[str, str], what: str) -> ApiError:
        return status_error(status, raw, headers, what, self.context)

    async def call(
        self,
        what: str,
        fn: Callable[..., Awaitable[aiohttp.ClientResponse]],
        /,
        *args: Any,
        safe: bool = True,
        allow_missing: bool = False,
        timeout: float | None = None,
        text: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Run one generated ``*_without_preload_content`` call and decode its JSON body.

        ``safe`` calls (no side effect, or idempotent) are retried on 429/5xx and dropped connections;
        any call is retried on 429 (the server did not act). ``allow_missing`` turns 404 into None;
        ``text`` returns the body as text instead of decoding JSON.
        """
        limit = timeout or self.timeout
        started, attempts = time.monotonic(), [0]
        seen: list[Any] = ["-", f"{self.server} ({what})", "error"]  # method, URL, status of the last attempt

        async def attempt() -> Any:
            self.stats.requests += 1
            attempts[0] += 1
            try:
                async with asyncio.timeout(limit):
                    response = await fn(*args, _request_timeout=float(limit), **kwargs)
                    seen[:] = [response.method, str(response.url), response.status]
                    try:
                        raw = await response.read()
                    finally:
                        response.release()
            except (TimeoutError, aiohttp.ClientError, *DROPS) as exc:
                # A timeout is the user's limit, not retried; a dropped connection is, when the call is safe.
                error = self._transport_error(exc, what, limit)
                if safe and dropped(exc):
                    raise Retryable(error) from None
                raise error from None
            status = response.status
            if 200 <= status < 300:
                if text:
                    return raw.decode("utf-8", "replace")
                return json.loads(raw) if raw else {}
            if status == 404 and allow_missing:
                return None
            failure = self._status_error(status, raw, response.headers, what)
            if retryable_status(status, safe=safe):
                raise Retryable(failure, retry_after=failure.retry_after)
            raise failure

        try:
            return await retrying(API_CALL, attempt, stats=self.stats)
        finally:
            if requestlog.enabled():
                requestlog.record("api", seen[0], seen[1], seen[2], started, attempts[0] - 1)

    def raw(self, api: Any, operation: str) -> Callable[..., Awaitable[aiohttp.ClientResponse]]:
        """A generated operation's ``*_without_preload_content`` variant: the raw response, no models built."""
        method: Callable[..., Awaitable[aiohttp.ClientResponse]] = getattr(api, f"{operation}_without_preload_content")
        return method

    def _listing(
        self, resource: str | tuple[str, str, str], namespace: str | None
    ) -> tuple[str, Any, str, tuple[Any, ...]]:
        """``(what, api, list operation, leading arguments)`` of a kind: ``nodes``, ``pods``, ``daemonsets`` or a
        custom resource ``(group, version, plural)`` (cluster-scoped)."""
        if isinstance(resource, tuple):
            return f"listing {resource[2]}", self.custom, "list_cluster_custom_object", resource
        where = f" in {namespace}" if namespace else ""
        if resource == "nodes":
            return "listing nodes", self.core, "list_node", ()
        if resource == "pods" and namespace is None:
            return "listing pods in all namespaces", self.core, "list_pod_for_all_namespaces", ()
        if resource == "pods":
            return f"listing pods{where}", self.core, "list_namespaced_pod", (namespace,)
        if resource == "daemonsets":
            return f"listing daemonsets{where}", self.apps, "list_namespaced_daemon_set", (namespace,)
        raise ValueError(f"no listing for {resource!r}")
