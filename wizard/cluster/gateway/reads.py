"""The gateway's reads: lists (paged, with the next page read ahead), single objects, logs, discovery.

Each is one call of :meth:`~wizard.cluster.gateway.base.GatewayBase.call` on a generated
``*_without_preload_content`` operation, answering plain JSON dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway.base import GatewayBase


class Reads(GatewayBase):
    """Reads (safe: retried on 5xx and dropped connections)."""

    async def version(self) -> dict[str, Any]:
        """``GET /version``."""
        return await self.call("reading the server version", self.versions.get_code_without_preload_content)

    async def list_nodes_page(
        self, *, limit: int | None = None, cont: str | None = None, label_selector: str | None = None
    ) -> dict[str, Any]:
        """One page of ``GET /api/v1/nodes?limit=…&continue=…`` as a NodeList dict."""
        fn = self.raw(self.core, "list_node")
        return await self.call("listing nodes", fn, limit=limit, _continue=cont, label_selector=label_selector)

    async def list_page(
        self,
        resource: str | tuple[str, str, str],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        cont: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list (with its ``metadata.resourceVersion`` and ``continue``), for list-then-watch caches.
        ``pods`` without a namespace: every namespace's."""
        what, api, operation, args = self._listing(resource, namespace)
        fn = self.raw(api, operation)
        found = await self.call(
            what, fn, *args, label_selector=label_selector, field_selector=field_selector, limit=limit, _continue=cont
        )
        return dict(found or {})

    async def pages(
        self,
        resource: str | tuple[str, str, str],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The one pager: every page of a list (``limit`` objects each), the next one already requested while the
        caller takes this one in (its server time and transfer overlap the caller's work); it is cancelled when
        the caller leaves early. A continue token that expired is the caller's (``ApiError`` 410: list again)."""

        def fetch(cont: str | None) -> asyncio.Future[dict[str, Any]]:
            return asyncio.ensure_future(
                self.list_page(
                    resource,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    limit=limit,
                    cont=cont,
                )
            )

        ahead: asyncio.Future[dict[str, Any]] | None = fetch(None)
        try:
            while ahead is not None:
                page = await ahead
                cont = (page.get("metadata") or {}).get("continue") or None
                ahead = fetch(cont) if cont else None
                await asyncio.sleep(0)  # let the read-ahead send its request before the caller takes the loop
                yield page
        finally:
            if ahead is not None and not ahead.done():
                ahead.cancel()
                with contextlib.suppress(asyncio.CancelledError, ClusterError):
                    await ahead

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
        pages = self.pages("pods", namespace=namespace, label_selector=label_selector, limit=limit)
        async with contextlib.aclosing(pages):
            async for page in pages:
                yield list(page.get("items") or []), str((page.get("metadata") or {}).get("resourceVersion") or "")

    async def all_pod_pages(
        self, *, field_selector: str | None = None, limit: int = 500
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """Pods of every namespace, one page (``limit``) at a time (the workloads on GPU nodes)."""
        pages = self.pages("pods", field_selector=field_selector, limit=limit)
        async with contextlib.aclosing(pages):
            async for page in pages:
                yield list(page.get("items") or [])

    async def read_node(self, name: str) -> dict[str, Any] | None:
        """One node, or None."""
        fn = self.raw(self.core, "read_node")
        return await self.call(f"reading node {name}", fn, name, allow_missing=True)

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

    async def list_secrets(
        self, namespace: str, *, label_selector: str, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Secrets of one namespace matching ``label_selector`` (Helm's release records; callers keep no data they
        do not read)."""
        fn = self.raw(self.core, "list_namespaced_secret")
        found = await self.call(
            f"listing secrets in {namespace} ({label_selector})", fn, namespace, label_selector=label_selector,
            limit=limit,
        )  # fmt: skip
        return list(found.get("items") or [])

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

    async def read_daemonset(self, namespace: str, name: str) -> dict[str, Any] | None:
        """One DaemonSet, or None."""
        fn = self.raw(self.apps, "read_namespaced_daemon_set")
        return await self.call(f"reading daemonset {namespace}/{name}", fn, name, namespace, allow_missing=True)

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
