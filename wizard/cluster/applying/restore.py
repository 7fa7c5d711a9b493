"""Putting custom resources back to what a backup holds: the undo of an apply, and ``gpu-wizard rollback``.

Each saved object is replaced at the live resourceVersion (re-read and tried again when the operator's
status updates race the write, as kubectl retries on conflict) and read back to confirm; the objects the
apply created are deleted; nodes the apply kept out of the driver rollout get their label back. A saved driver
DaemonSet (one the apply deleted as left behind by the operator) is re-created when absent; one present again (the
operator's, once the policy asks for it) is left to it. :mod:`wizard.cluster.applying.apply` undoes a failed apply with :func:`restore`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.cluster.applying.backup import Backup, ObjectRef, clean, read_backup
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import LABEL_DEPLOY_DRIVER

CONFLICT_ATTEMPTS = 5
"""Tries to restore one object when the operator keeps updating it between our read and our write."""


async def read_object(gateway: Gateway, ref: ObjectRef) -> dict[str, Any] | None:
    """The live object (None: absent)."""
    return await gateway.get_custom(*ref.api, ref.name)


async def _restore_one(gateway: Gateway, ref: ObjectRef, saved: Mapping[str, Any]) -> str:
    """Put one saved object back; a write raced by the operator (its status updates) is re-read and retried."""
    for attempt in range(CONFLICT_ATTEMPTS):
        now = await read_object(gateway, ref)
        body = clean(saved)
        if now is None:
            await gateway.create_custom(*ref.api, body)
            return f"re-created {ref.key}"
        if clean(now) == body:
            return f"{ref.key} already matches the backup"
        body["metadata"]["resourceVersion"] = now["metadata"]["resourceVersion"]
        try:
            await gateway.replace_custom(*ref.api, ref.name, body)
        except ApiError as exc:
            if exc.status != 409 or attempt == CONFLICT_ATTEMPTS - 1:
                raise
            continue  # modified between our read and our write: read again, like kubectl's retry on conflict
        return f"restored {ref.key}"
    raise AssertionError("unreachable")


async def _restore_daemonset(gateway: Gateway, ref: ObjectRef, saved: Mapping[str, Any]) -> str:
    """Re-create a driver DaemonSet the apply deleted; one there again (the operator made it) stays as it is."""
    if await gateway.read_daemonset(ref.namespace, ref.name) is not None:
        return f"{ref.key} is there already"
    body = clean(saved)
    # blockOwnerDeletion would need `update` on the owner's finalizers where OwnerReferencesPermissionEnforcement
    # runs (OpenShift); it only matters to a foreground deletion of the owner
    for owner in body["metadata"].get("ownerReferences") or []:
        if isinstance(owner, dict):
            owner.pop("blockOwnerDeletion", None)
    try:
        await gateway.create_daemonset(ref.namespace, body)
    except ApiError as exc:
        if exc.status != 409:  # 409: the operator made it between our read and our write
            raise
        return f"{ref.key} is there already"
    if await gateway.read_daemonset(ref.namespace, ref.name) is None:
        raise ClusterError(f"rollback: {ref.key} is still absent after re-creating it")
    return f"re-created {ref.key}"


async def restore(gateway: Gateway, backup: Backup, *, only: set[str] | None = None) -> list[str]:
    """Make the objects match the backup exactly: replace the saved ones, delete those the apply created."""
    lines: list[str] = []
    for saved in backup.objects:
        ref = ObjectRef.of(saved)
        if only is not None and ref.key not in only:
            continue
        if ref.daemonset:
            lines.append(await _restore_daemonset(gateway, ref, saved))
            continue
        lines.append(await _restore_one(gateway, ref, saved))
        if clean(await read_object(gateway, ref) or {}) != clean(saved):
            raise ClusterError(f"rollback: {ref.key} still differs from the backup after restoring it")
    for ref in backup.created:
        if only is not None and ref.key not in only:
            continue
        gone = await gateway.delete_custom(*ref.api, ref.name)
        lines.append(f"deleted {ref.key} (created by the apply)" if gone else f"{ref.key} already absent")
    for node, before in sorted(backup.node_labels.items()):
        if only is not None and f"Node/{node}" not in only:
            continue
        lines.append(await _restore_label(gateway, node, before))
    return lines


async def _restore_label(gateway: Gateway, node: str, before: str | None) -> str:
    """Put a node's driver deploy label back to its value before the apply (remove it when it had none)."""
    if await gateway.read_node(node) is None:
        return f"Node/{node} is gone: its label needs no restoring"
    await gateway.patch_node_labels(node, {LABEL_DEPLOY_DRIVER: before})
    labels = ((await gateway.read_node(node) or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(LABEL_DEPLOY_DRIVER) != before and before is not None:
        raise ClusterError(f"rollback: Node/{node} label {LABEL_DEPLOY_DRIVER} still differs from the backup")
    shown = before if before is not None else "(removed)"
    return f"restored Node/{node} label {LABEL_DEPLOY_DRIVER}={shown}"


async def rollback(gateway: Gateway, backup: Backup | str | Path) -> list[str]:
    """Restore exactly what a backup (or backup file) holds (see :func:`restore`)."""
    if not isinstance(backup, Backup):
        backup = await asyncio.to_thread(read_backup, Path(backup))  # a file read and a YAML parse: off the loop
    return await restore(gateway, backup)
