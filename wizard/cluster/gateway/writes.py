"""The gateway's writes: server-side apply and replace of custom resources, node labels (``driver.excludeNodes``),
creating and deleting the host probe's pods, DaemonSets and Jobs. A write is retried only on 429 (the server did not act), a
dry-run also on 5xx and dropped connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.cluster.gateway.base import APPLY_CONTENT_TYPE, FIELD_MANAGER, GatewayBase

MERGE_PATCH = "application/merge-patch+json"


class Writes(GatewayBase):
    """Writes, each named in its error messages."""

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

    async def patch_node_labels(self, name: str, labels: Mapping[str, str | None]) -> dict[str, Any]:
        """Set (or, for None, remove) node labels by a JSON merge patch (idempotent); the other labels are left alone."""
        fn = self.raw(self.core, "patch_node")
        body = {"metadata": {"labels": dict(labels)}}
        return await self.call(
            f"labelling node {name}", fn, name, body, field_manager=FIELD_MANAGER, _content_type=MERGE_PATCH
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
        """Create a DaemonSet (the host probe's).

        Sent through the client's generic object call (the same ``POST /apis/apps/v1/namespaces/…/daemonsets``): the
        typed call builds and dumps a model of the whole body first, and the probe's node affinity holds a term per
        node — 70–100 ms of the loop's CPU in one turn at 5,000 nodes (docs/benchmarks.md)."""
        fn = self.raw(self.custom, "create_namespaced_custom_object")
        return await self.call(
            f"creating a daemonset in {namespace}",
            fn,
            "apps",
            "v1",
            namespace,
            "daemonsets",
            dict(body),
            field_manager=FIELD_MANAGER,
            safe=False,
        )

    async def delete_daemonset(self, namespace: str, name: str, *, uid: str = "") -> bool:
        """Delete a DaemonSet and (background propagation) its pods; one already gone is fine (False).

        With ``uid`` only that very object (a precondition): one re-created under the same name since is kept
        (409)."""
        fn = self.raw(self.apps, "delete_namespaced_daemon_set")
        body = {"propagationPolicy": "Background", **({"preconditions": {"uid": uid}} if uid else {})}
        found = await self.call(
            f"deleting daemonset {namespace}/{name}",
            fn,
            name,
            namespace,
            body=body,
            allow_missing=True,
        )
        return found is not None

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
