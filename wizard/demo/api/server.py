"""The demo cluster's Kubernetes API server: an aiohttp application speaking the Kubernetes REST contract."""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from wizard.demo.api import access, discovery, execws, reads, registryapi, writes
from wizard.demo.api.faults import DroppedConnection, Faults, fault_middleware
from wizard.demo.api.kinds import Registry
from wizard.demo.api.reads import Target
from wizard.demo.api.selectors import combined
from wizard.demo.api.status import ApiError
from wizard.demo.api.store import Store
from wizard.demo.api.watch import WatchHub, serve_watch

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_PUBLIC = ("/healthz", "/livez", "/readyz")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


@functools.lru_cache(maxsize=64)
def _loopback(remote: str) -> bool:
    """Whether a peer address is a loopback one (parsed once per address: every exec is a new connection)."""
    try:
        return ipaddress.ip_address(remote.split("%")[0]).is_loopback
    except ValueError:
        return False


def _not_found_path() -> ApiError:
    return ApiError(404, "the server could not find the requested resource", details={})


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(obj).encode(), content_type="application/json")


class ApiServer:
    """The request router and its shared state; :meth:`application` builds the aiohttp app."""

    def __init__(
        self,
        store: Store,
        runner: execws.ExecRunner,
        token: str,
        faults: Faults,
        rbac_deny: list[dict[str, str]] | None = None,
    ) -> None:
        self.store = store
        self.runner = runner
        self.token = token
        self.faults = faults
        self.rbac_deny = rbac_deny or []
        self.registry = Registry(store)
        self.hub: WatchHub | None = None
        self.server_address = "127.0.0.1:0"
        self.image_catalog: Mapping[str, Mapping[str, str]] | None = None
        """The scenario catalog served at ``/v2/`` (None: the scenario names a real registry instead)."""

    def application(self) -> web.Application:
        """The aiohttp application (call inside the event loop that will serve it)."""
        self.hub = WatchHub(self.store, asyncio.get_running_loop())
        app = web.Application(
            middlewares=[self._guard, self._errors, self._auth, fault_middleware(lambda: self.faults)],
            client_max_size=64 * 1024 * 1024,
        )
        app.router.add_route("*", "/{tail:.*}", self.dispatch)
        return app

    def close_watches(self) -> None:
        """Ask every open watch to end (server shutdown)."""
        if self.hub is not None:
            self.hub.closing.set()

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Serve loopback clients only, and only under a loopback Host name (no DNS rebinding)."""
        local = _loopback(request.remote or "")
        host = (request.host or "").rsplit(":", 1)[0] if not (request.host or "").startswith("[") else "[::1]"
        if not local or host not in _LOOPBACK_HOSTS:
            return ApiError(403, "the gpu-wizard demo API serves loopback clients only").response()
        return await handler(request)

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Turn ApiError into a Status response, and anything unexpected into a 500 Status."""
        try:
            return await handler(request)
        except ApiError as exc:
            return exc.response()
        except DroppedConnection:
            return web.Response(status=500)  # never delivered: the transport is already aborted
        except web.HTTPException:
            raise
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:
            log.exception("demo API: %s %s failed", request.method, request.path)
            return ApiError(500, f"Internal error occurred: {type(exc).__name__}: {exc}").response()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        # The image registry (/v2/) is anonymous, like a public pull-through cache.
        if request.path not in _PUBLIC and not (self.image_catalog is not None and request.path.startswith("/v2")):
            access.check_token(request.headers.get("Authorization"), self.token)
        return await handler(request)

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["v2"] and self.image_catalog is not None:
            return registryapi.handle(request, self.image_catalog)
        if path in _PUBLIC:
            return web.Response(text="ok")
        if path == "/version":
            return _json(discovery.version_info())
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:])
        if parts[:1] == ["openapi"]:
            raise _not_found_path()  # v2 is protobuf-only for kubectl; it falls back to v3
        if parts[:1] == ["api"]:
            if len(parts) == 1:
                return _json(discovery.api_versions(self.server_address))
            return await self._group_request(request, "", parts[1], parts[2:])
        if parts[:1] == ["apis"]:
            if len(parts) == 1:
                return _json(discovery.api_group_list(self.registry))
            if len(parts) == 2:
                group = discovery.api_group(self.registry, parts[1])
                if group is None:
                    raise _not_found_path()
                return _json(group)
            return await self._group_request(request, parts[1], parts[2], parts[3:])
        raise _not_found_path()

    def _openapi(self, rest: list[str]) -> web.Response:
        if not rest:
            return _json(discovery.openapi_v3_root(self.registry))
        if rest[0] == "api" and len(rest) == 2:
            doc = discovery.openapi_v3_doc(self.registry, "", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            doc = discovery.openapi_v3_doc(self.registry, rest[1], rest[2])
        else:
            doc = None
        if doc is None:
            raise _not_found_path()
        return _json(doc)

    def _target(self, group: str, version: str, rest: list[str]) -> Target:
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise _not_found_path()
        rtype = self.registry.find(group, version, rest[0])
        if rtype is None:
            raise _not_found_path()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in rtype.subresources:
            raise _not_found_path()
        if namespace is not None and not rtype.namespaced:
            raise _not_found_path()
        if rtype.namespaced and namespace is None and name is not None:
            raise _not_found_path()
        return Target(rtype, namespace, name, sub)

    async def _group_request(
        self, request: web.Request, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        if not rest:
            if request.method != "GET":
                raise ApiError(405, "the server does not allow this method on the requested resource")
            listing = discovery.api_resource_list(self.registry, group, version)
            if listing is None:
                raise _not_found_path()
            return _json(listing)
        target = self._target(group, version, rest)
        watch = request.query.get("watch") in ("true", "1")
        verb = access.request_verb(request.method, target.name is not None, watch)
        rtype = target.rtype
        if target.subresource == "exec":
            verb = "create" if request.method == "POST" else "get"
        denied = access.is_denied(self.rbac_deny, verb, rtype.plural, rtype.group, target.subresource, target.namespace)
        if denied:
            raise access.forbidden(verb, rtype.plural, target.subresource, rtype.group, target.name, target.namespace)
        if (
            target.subresource == "exec"
            and verb == "get"
            and access.is_denied(
                self.rbac_deny, "create", rtype.plural, rtype.group, target.subresource, target.namespace
            )
        ):
            # Kubernetes 1.35+ (AuthorizePodWebsocketUpgradeCreatePermission) checks `create` on a websocket
            # exec too, and its 403 says no more than this (measured on kube-apiserver v1.36.3)
            raise ApiError(
                403,
                f"{rtype.plural} {json.dumps(target.name)} is forbidden: ",
                details={"name": target.name or "", "kind": rtype.plural},
            )
        return await self._object_request(request, target, watch)

    async def _object_request(self, request: web.Request, target: Target, watch: bool) -> web.StreamResponse:
        method, store = request.method, self.store
        if target.rtype.plural == "selfsubjectaccessreviews":
            if method != "POST" or target.name is not None:
                raise ApiError(405, "the server does not allow this method on the requested resource")
            return _json(
                access.review(self.rbac_deny, reads.parse_body(await request.read(), request.content_type)), 201
            )
        if target.subresource in ("exec", "log"):
            assert target.name is not None and target.namespace is not None
            pod = execws.find_pod(store.lookup, target.namespace, target.name)
            if target.subresource == "log":
                assert self.hub is not None
                return await execws.serve_logs(request, pod, self.runner)
            return await execws.serve_exec(request, pod, self.runner, self.faults, self._node_ip)
        if method in ("GET", "HEAD"):
            if target.name is not None:
                return reads.get_object(store, request, target)
            if watch:
                assert self.hub is not None
                matcher = combined(request.query.get("labelSelector"), request.query.get("fieldSelector"))
                return await serve_watch(
                    request,
                    self.hub,
                    target.rtype,
                    target.namespace,
                    matcher,
                    self.faults.watch_expiry_s,
                    lambda: self.faults.take("watch_expiry"),
                )
            return reads.list_objects(store, request, target)
        if method == "POST" and target.name is None:
            return await writes.create(store, request, target)
        if method == "PUT" and target.name is not None:
            return await writes.replace(store, request, target)
        if method == "PATCH" and target.name is not None:
            return await writes.patch(store, request, target)
        if method == "DELETE" and target.name is not None:  # no deletecollection: kubectl deletes one by one
            return await writes.delete(store, request, target)
        raise ApiError(405, "the server does not allow this method on the requested resource")

    def _node_ip(self, name: str) -> str:
        node = self.store.lookup("nodes", name) or {}
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return str(address.get("address", ""))
        return "10.0.0.1"
