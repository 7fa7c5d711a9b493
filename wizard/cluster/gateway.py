"""The one door to the Kubernetes API: the official client's asyncio flavour (``kubernetes.aio``).

Nothing else in ``wizard/`` imports ``kubernetes``. Every call goes through the generated API's
``*_without_preload_content`` variants and hands back plain JSON dicts: the engine reads nodes and
custom resources as JSON (as :mod:`wizard.engine.facts` expects) and never builds thousands of pydantic
models. Each call is bounded by a timeout; calls that are safe to repeat (reads, dry-runs, access
reviews) are retried on 5xx and dropped connections, any call on 429, honouring ``Retry-After``; an
exec the server refused before starting the command is retried too (the policy: :mod:`wizard.retry`).
``Gateway.stats`` counts requests and retries. Errors come out as :class:`wizard.cluster.errors.ClusterError` subclasses worded for the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from kubernetes.aio import client, config, watch
from kubernetes.aio.client.exceptions import ApiException
from kubernetes.aio.config import ConfigException
from kubernetes.aio.stream import WsApiClient

from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.kubeconfig import (
    choose_context,
    context_kubeconfig,
    exec_credential,
    existing_paths,
    with_credential,
)
from wizard.cluster.transport import ExecOutput, ExecResult, env_proxy, status_error, transport_error
from wizard.engine.results import CallStats
from wizard.retry import API_CALL, DROPS, EXEC, Retryable, dropped, retryable_status, retrying

DEFAULT_TIMEOUT = 10.0
SHOWN_COMMAND = 48
"""Characters of an exec's command quoted in an error (the verification scripts are long)."""
APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
FIELD_MANAGER = "gpu-wizard"


class Gone(ClusterError):
    """A watch's resourceVersion is too old (410): list again, then watch from the new version."""


async def _load_kubeconfig(kubeconfig: str | None, context: str | None) -> tuple[client.Configuration, str]:
    chosen = choose_context(kubeconfig, context)
    configuration = client.Configuration()
    document = context_kubeconfig(kubeconfig, chosen)
    users = document["users"]
    try:
        if users and isinstance(users[0]["user"].get("exec"), dict):
            # The plugin runs here, as kubectl runs it (cluster info, install hint, its errors as text);
            # the client library only gets the credential it returned.
            credential = with_credential(document, await exec_credential(document))
            await config.load_kube_config_from_dict(
                config_dict=credential, context=chosen, client_configuration=configuration
            )
        else:
            await config.load_kube_config(
                config_file=existing_paths(kubeconfig),
                context=chosen,
                client_configuration=configuration,
                persist_config=False,
            )
    except (ConfigException, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ClusterError(
            f"context {chosen!r}: cannot load its cluster or credentials ({exc})",
            "log in again (the credentials may be missing or expired) or fix the kubeconfig",
        ) from None
    except OSError as exc:
        raise ClusterError(f"context {chosen!r}: cannot read a file it names ({exc})") from None
    return configuration, chosen


def _import_api_classes() -> None:
    """Import the generated API classes the gateway builds (the client loads them lazily).

    Their pydantic models take about a second of CPU to import; in a thread that second no longer
    stalls the caller's event loop (the TUI's Connect step).
    """
    apis = ("ApiClient", "CoreV1Api", "AppsV1Api", "BatchV1Api", "CustomObjectsApi", "AuthorizationV1Api", "VersionApi")
    for name in apis:
        getattr(client, name)


def _in_cluster_configuration() -> client.Configuration:
    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)
    except ConfigException as exc:
        raise ClusterError(
            f"in-cluster configuration unavailable ({exc})",
            "--in-cluster works only inside a pod with a service account; use --kubeconfig/--context elsewhere",
        ) from None
    return configuration


class Gateway:
    """An authenticated connection to one API server; create with :meth:`connect`, end with :meth:`close`."""

    def __init__(self, configuration: client.Configuration, *, context: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 128)
        if not configuration.proxy and not env_proxy(configuration.host):
            # The client's sessions trust the environment, which costs a proxy and .netrc lookup on every
            # request (~0.7 ms, i.e. most of an exec's client CPU). With no proxy for this server, skip it.
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
        self._ws: WsApiClient | None = None
        self.stats = CallStats()
        """Requests sent (every attempt) and retries made, for fault reports."""

    @classmethod
    async def connect(
        cls,
        *,
        kubeconfig: str | None = None,
        context: str | None = None,
        in_cluster: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Gateway:
        """Load credentials like kubectl does (no request is made yet)."""
        if in_cluster:
            configuration, chosen = _in_cluster_configuration(), "in-cluster"
        else:
            configuration, chosen = await _load_kubeconfig(kubeconfig, context)
        # Only once the credentials are there (a failing exec plugin or a bad kubeconfig costs no import),
        # and in a thread: importing the generated API classes is ~1.3 s of CPU in a fresh process.
        await asyncio.to_thread(_import_api_classes)
        return cls(configuration, context=chosen, timeout=timeout)

    async def close(self) -> None:
        """Close the HTTP and websocket sessions."""
        await self.api.close()
        if self._ws is not None:
            await self._ws.close()
            self._ws = None

    # -- the one request path -------------------------------------------------------------------

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

        async def attempt() -> Any:
            self.stats.requests += 1
            try:
                async with asyncio.timeout(limit):
                    response = await fn(*args, _request_timeout=float(limit), **kwargs)
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

        return await retrying(API_CALL, attempt, stats=self.stats)

    # -- reads ----------------------------------------------------------------------------------

    async def version(self) -> dict[str, Any]:
        """``GET /version``."""
        return await self.call("reading the server version", self.versions.get_code_without_preload_content)

    def raw(self, api: Any, operation: str) -> Callable[..., Awaitable[aiohttp.ClientResponse]]:
        """A generated operation's ``*_without_preload_content`` variant: the raw response, no models built."""
        method: Callable[..., Awaitable[aiohttp.ClientResponse]] = getattr(api, f"{operation}_without_preload_content")
        return method

    async def list_nodes_page(
        self, *, limit: int | None = None, cont: str | None = None, label_selector: str | None = None
    ) -> dict[str, Any]:
        """One page of ``GET /api/v1/nodes?limit=…&continue=…`` as a NodeList dict."""
        fn = self.raw(self.core, "list_node")
        return await self.call("listing nodes", fn, limit=limit, _continue=cont, label_selector=label_selector)

    async def node_pages(self, *, limit: int) -> AsyncGenerator[dict[str, Any], None]:
        """Every page of ``GET /api/v1/nodes`` (``limit`` each), with the next page already requested.

        The request for page N+1 is in flight while the caller works on page N, so the caller's per-node
        work overlaps the server's encoding and the transfer of the next page instead of adding to them
        (discovery of 5,000 nodes costs about one page's work more than the bare paged fetch). Close the
        generator (``contextlib.aclosing``) when leaving early: the read-ahead request is cancelled.

        The cyclic garbage collector is paused while the pages are read: decoding 5,000 nodes allocates
        about a million containers, and each allocation burst made the collector scan the growing heap
        again for cycles that JSON cannot contain (a third of discovery's CPU time). Memory is still freed
        by reference counting; the collector runs again when the generator ends.
        """
        collecting = gc.isenabled()
        gc.disable()
        ahead: asyncio.Task[dict[str, Any]] | None = asyncio.ensure_future(self.list_nodes_page(limit=limit))
        try:
            while ahead is not None:
                page = await ahead
                cont = (page.get("metadata") or {}).get("continue") or None
                ahead = asyncio.ensure_future(self.list_nodes_page(limit=limit, cont=cont)) if cont else None
                await asyncio.sleep(0)  # let the read-ahead send its request before the caller takes the loop
                yield page
        finally:
            if collecting:
                gc.enable()
            if ahead is not None and not ahead.done():
                ahead.cancel()
                with contextlib.suppress(asyncio.CancelledError, ClusterError):
                    await ahead

    async def watch(
        self,
        what: str,
        fn: Callable[..., Any],
        *args: Any,
        resource_version: str,
        timeout_seconds: int = 300,
        **kwargs: Any,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """``(type, object)`` events of a list call's watch after ``resource_version``, until the server ends
        it (after ``timeout_seconds``); :class:`Gone` when that version is too old (list again)."""
        stream = _DictWatch()
        limit = float(timeout_seconds + 15)
        try:
            async for event in stream.stream(
                fn,
                *args,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
                _request_timeout=limit,
                **kwargs,
            ):
                yield str(event["type"]), event["raw_object"]
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(f"{what}: the watch expired ({exc.reason})") from None
            raise self._status_error(exc.status or 0, str(exc.reason or "").encode(), {}, what) from None
        except (TimeoutError, aiohttp.ClientError, *DROPS) as exc:
            raise self._transport_error(exc, what, limit) from None
        finally:
            await stream.close()

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
        if resource == "pods":
            return f"listing pods{where}", self.core, "list_namespaced_pod", (namespace,)
        if resource == "daemonsets":
            return f"listing daemonsets{where}", self.apps, "list_namespaced_daemon_set", (namespace,)
        raise ValueError(f"no listing for {resource!r}")

    async def list_page(
        self,
        resource: str | tuple[str, str, str],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        limit: int | None = None,
        cont: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list (with its ``metadata.resourceVersion`` and ``continue``), for list-then-watch caches."""
        what, api, operation, args = self._listing(resource, namespace)
        fn = self.raw(api, operation)
        found = await self.call(what, fn, *args, label_selector=label_selector, limit=limit, _continue=cont)
        return dict(found or {})

    def watch_resource(
        self,
        resource: str | tuple[str, str, str],
        resource_version: str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Events of a kind after ``resource_version`` (see :meth:`watch`)."""
        what, api, operation, args = self._listing(resource, namespace)
        return self.watch(
            what.replace("listing", "watching", 1),
            getattr(api, operation),
            *args,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
        )

    def watch_nodes(
        self, resource_version: str, *, timeout_seconds: int = 300
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Node events after ``resource_version`` (see :meth:`watch`)."""
        return self.watch(
            "watching nodes", self.core.list_node, resource_version=resource_version, timeout_seconds=timeout_seconds
        )

    def watch_pods(
        self, namespace: str, resource_version: str, *, label_selector: str | None = None, timeout_seconds: int = 300
    ) -> AsyncGenerator[tuple[str, dict[str, Any]], None]:
        """Pod events of a namespace after ``resource_version`` (see :meth:`watch`)."""
        what = f"watching pods in {namespace}"
        return self.watch(
            what,
            self.core.list_namespaced_pod,
            namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            label_selector=label_selector,
        )

    async def list_pods(
        self, namespace: str, *, label_selector: str | None = None, field_selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Pods of one namespace matching the selectors."""
        fn = self.raw(self.core, "list_namespaced_pod")
        found = await self.call(
            f"listing pods in {namespace}", fn, namespace, label_selector=label_selector, field_selector=field_selector
        )
        return list(found.get("items") or [])

    async def pod_pages(
        self, namespace: str, *, label_selector: str | None = None, limit: int = 500
    ) -> AsyncGenerator[tuple[list[dict[str, Any]], str], None]:
        """``(pods, list resourceVersion)`` one page (``limit``) at a time, so a caller keeps only what it needs."""
        fn = self.raw(self.core, "list_namespaced_pod")
        what = f"listing pods in {namespace}"
        cont: str | None = None
        while True:
            page = await self.call(what, fn, namespace, label_selector=label_selector, limit=limit, _continue=cont)
            meta = page.get("metadata") or {}
            yield list(page.get("items") or []), str(meta.get("resourceVersion") or "")
            cont = meta.get("continue") or None
            if not cont:
                return

    async def all_pod_pages(
        self, *, field_selector: str | None = None, limit: int = 500
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Pods of every namespace, one page (``limit``) at a time (the workloads on GPU nodes)."""
        fn = self.raw(self.core, "list_pod_for_all_namespaces")
        cont: str | None = None
        while True:
            page = await self.call(
                "listing pods in all namespaces", fn, field_selector=field_selector, limit=limit, _continue=cont
            )
            yield list(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue") or None
            if not cont:
                return

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One pod, or None."""
        fn = self.raw(self.core, "read_namespaced_pod")
        return await self.call(f"reading pod {namespace}/{name}", fn, name, namespace, allow_missing=True)

    async def read_log(
        self, namespace: str, pod: str, container: str, *, tail_lines: int = 20, previous: bool = False
    ) -> str:
        """The last lines of a container's log, or of its previous run ("" when there is none)."""
        fn = self.raw(self.core, "read_namespaced_pod_log")
        what = f"reading the log of {namespace}/{pod} ({container})"
        args: dict[str, Any] = {"container": container, "tail_lines": tail_lines, "previous": previous or None}
        return str(await self.call(what, fn, pod, namespace, allow_missing=True, text=True, **args) or "")

    async def list_events(
        self, namespace: str, *, field_selector: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Events of one namespace (one page of at most ``limit``), e.g. ``involvedObject.name=<pod>``."""
        fn = self.raw(self.core, "list_namespaced_event")
        found = await self.call(
            f"listing events in {namespace}", fn, namespace, field_selector=field_selector, limit=limit
        )
        return list((found or {}).get("items") or [])

    async def configmap_exists(self, namespace: str, name: str) -> bool:
        """Whether the ConfigMap exists (ApiError 403 when the user may not read it)."""
        fn = self.raw(self.core, "read_namespaced_config_map")
        return (
            await self.call(f"reading configmap {namespace}/{name}", fn, name, namespace, allow_missing=True)
            is not None
        )

    async def secret_type(self, namespace: str, name: str) -> str | None:
        """A Secret's ``type``, or None when it does not exist; nothing of its data is kept or shown."""
        fn = self.raw(self.core, "read_namespaced_secret")
        found = await self.call(f"reading secret {namespace}/{name}", fn, name, namespace, allow_missing=True)
        return None if found is None else str(found.get("type") or "Opaque")

    async def list_jobs(self, namespace: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        """Jobs of one namespace matching the selector."""
        fn = self.raw(self.batch, "list_namespaced_job")
        found = await self.call(f"listing jobs in {namespace}", fn, namespace, label_selector=label_selector)
        return list(found.get("items") or [])

    async def list_daemonsets(self, namespace: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        """DaemonSets of one namespace matching the selector."""
        fn = self.raw(self.apps, "list_namespaced_daemon_set")
        found = await self.call(f"listing daemonsets in {namespace}", fn, namespace, label_selector=label_selector)
        return list(found.get("items") or [])

    async def list_deployments(self, namespace: str | None) -> list[dict[str, Any]]:
        """Deployments of one namespace, or of all namespaces when None."""
        if namespace is None:
            found = await self.call("listing deployments", self.raw(self.apps, "list_deployment_for_all_namespaces"))
        else:
            fn = self.raw(self.apps, "list_namespaced_deployment")
            found = await self.call(f"listing deployments in {namespace}", fn, namespace)
        return list(found.get("items") or [])

    async def api_resources(self, group: str, version: str) -> dict[str, Any] | None:
        """Discovery of ``/apis/<group>/<version>`` (an APIResourceList), or None when not served."""
        fn = self.raw(self.custom, "get_api_resources")
        return await self.call(f"discovering {group}/{version}", fn, group, version, allow_missing=True)

    async def get_custom(self, group: str, version: str, plural: str, name: str) -> dict[str, Any] | None:
        """One cluster-scoped custom object, or None."""
        fn = self.raw(self.custom, "get_cluster_custom_object")
        return await self.call(f"reading {plural}/{name}", fn, group, version, plural, name, allow_missing=True)

    async def list_custom(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        """Every cluster-scoped custom object of a kind ([] when the CRD is missing)."""
        fn = self.raw(self.custom, "list_cluster_custom_object")
        found = await self.call(f"listing {plural}", fn, group, version, plural, allow_missing=True)
        return list((found or {}).get("items") or [])

    # -- writes ---------------------------------------------------------------------------------

    async def apply_custom(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        body: Mapping[str, Any],
        *,
        dry_run: bool,
        force: bool = False,
        field_manager: str = FIELD_MANAGER,
    ) -> dict[str, Any]:
        """Server-side apply (field manager ``gpu-wizard`` unless told, strict field validation); dry-run when asked.

        Only a dry-run is retried after a dropped connection: a real apply is re-read by the caller first.
        """
        fn = self.raw(self.custom, "patch_cluster_custom_object")
        options: dict[str, Any] = {"dry_run": "All" if dry_run else None, "field_validation": "Strict", "force": force}
        options |= {"field_manager": field_manager, "_content_type": APPLY_CONTENT_TYPE}
        what = f"{'dry-run ' if dry_run else ''}applying {plural}/{name}"
        return await self.call(what, fn, group, version, plural, name, dict(body), safe=dry_run, **options)

    async def replace_custom(
        self, group: str, version: str, plural: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``PUT`` a whole custom object (its ``metadata.resourceVersion`` guards against lost updates)."""
        fn = self.raw(self.custom, "replace_cluster_custom_object")
        return await self.call(
            f"replacing {plural}/{name}", fn, group, version, plural, name, dict(body), field_manager=FIELD_MANAGER
        )

    async def create_custom(self, group: str, version: str, plural: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST`` a new cluster-scoped custom object."""
        fn = self.raw(self.custom, "create_cluster_custom_object")
        return await self.call(
            f"creating {plural}", fn, group, version, plural, dict(body), field_manager=FIELD_MANAGER, safe=False
        )

    async def delete_custom(self, group: str, version: str, plural: str, name: str) -> bool:
        """Delete a cluster-scoped custom object; False when it was already gone."""
        fn = self.raw(self.custom, "delete_cluster_custom_object")
        return (
            await self.call(f"deleting {plural}/{name}", fn, group, version, plural, name, allow_missing=True)
            is not None
        )

    async def create_pod(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a pod."""
        fn = self.raw(self.core, "create_namespaced_pod")
        return await self.call(
            f"creating a pod in {namespace}", fn, namespace, dict(body), field_manager=FIELD_MANAGER, safe=False
        )

    async def delete_pod(self, namespace: str, name: str) -> None:
        """Delete a pod at once (grace period 0); a pod already gone is fine."""
        fn = self.raw(self.core, "delete_namespaced_pod")
        await self.call(
            f"deleting pod {namespace}/{name}", fn, name, namespace, grace_period_seconds=0, allow_missing=True
        )

    async def create_daemonset(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a DaemonSet (the host probe's)."""
        fn = self.raw(self.apps, "create_namespaced_daemon_set")
        return await self.call(
            f"creating a daemonset in {namespace}", fn, namespace, dict(body), field_manager=FIELD_MANAGER, safe=False
        )

    async def delete_daemonset(self, namespace: str, name: str) -> None:
        """Delete a DaemonSet and (background propagation) its pods; one already gone is fine."""
        fn = self.raw(self.apps, "delete_namespaced_daemon_set")
        await self.call(
            f"deleting daemonset {namespace}/{name}",
            fn,
            name,
            namespace,
            propagation_policy="Background",
            allow_missing=True,
        )

    async def create_job(self, namespace: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Create a Job (the host probe's deadline anchor)."""
        fn = self.raw(self.batch, "create_namespaced_job")
        return await self.call(
            f"creating a job in {namespace}", fn, namespace, dict(body), field_manager=FIELD_MANAGER, safe=False
        )

    async def delete_job(self, namespace: str, name: str) -> None:
        """Delete a Job and (background propagation) what it owns; one already gone is fine."""
        fn = self.raw(self.batch, "delete_namespaced_job")
        await self.call(
            f"deleting job {namespace}/{name}", fn, name, namespace, propagation_policy="Background", allow_missing=True
        )

    async def list_everywhere(self, resource: str, *, label_selector: str) -> list[dict[str, Any]]:
        """``pods``, ``daemonsets`` or ``jobs`` of every namespace matching ``label_selector`` (what ``gpu-wizard
        cleanup`` looks for)."""
        api, operation = {
            "pods": (self.core, "list_pod_for_all_namespaces"),
            "daemonsets": (self.apps, "list_daemon_set_for_all_namespaces"),
            "jobs": (self.batch, "list_job_for_all_namespaces"),
        }[resource]
        found = await self.call(
            f"listing {resource} in all namespaces", self.raw(api, operation), label_selector=label_selector
        )
        return list(found.get("items") or [])

    async def access_review(
        self, verb: str, resource: str, *, group: str = "", namespace: str = "", subresource: str = ""
    ) -> tuple[bool, str]:
        """SelfSubjectAccessReview: may the current user do this? (allowed, reason)."""
        attributes = {"verb": verb, "resource": resource, "group": group}
        if namespace:
            attributes["namespace"] = namespace
        if subresource:
            attributes["subresource"] = subresource
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        result = await self.call(
            f"checking permission {verb} {resource}",
            self.authz.create_self_subject_access_review_without_preload_content,
            body,
        )
        status = result.get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or status.get("evaluationError") or "")

    # -- exec -----------------------------------------------------------------------------------

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
        if self._ws is None:
            self._ws = WsApiClient(configuration=self.configuration)
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
        assert self._ws is not None
        # WsApiClient answers with aiohttp's ws_connect context manager, not the annotated ClientResponse.
        connection: Any = await client.CoreV1Api(self._ws).connect_get_namespaced_pod_exec_without_preload_content(
            pod, namespace, command=command, container=container, stderr=True, stdin=False, stdout=True, tty=False
        )
        async with connection as ws:
            async for message in ws:
                if isinstance(message.data, bytes | str):
                    output.frame(message.data)
        return output.result()


class _DictWatch(watch.Watch):  # type: ignore[misc]
    """A watch whose events carry the object as decoded once: the library's ``return_type="object"`` encodes
    every decoded event back to JSON and decodes it again (three JSON passes per event, thousands of events
    in a 5,000-node rollout, all on the event loop).

    Nor does it build the library's own ``ApiClient``: that one only turns events into models, and building it
    builds a TLS context that loads the system's CA store (40-200 ms on the event loop, for every watch started:
    five at once when a rollout is followed)."""

    def __init__(self) -> None:  # not the library's: see above
        self._raw_return_type = None
        self._stop = False
        self.resource_version = None
        self.resp = None

    def get_return_type(self, func: Any) -> None:
        return None  # no model and no re-decoding: ``object`` stays the decoded dict

    async def close(self) -> None:
        if self.resp is not None:
            self.resp.release()
            self.resp = None
