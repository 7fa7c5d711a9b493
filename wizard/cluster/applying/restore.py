"""Putting custom resources back to what a backup holds: the undo of an apply, and ``gpu-wizard rollback``.

Each saved object is replaced at the live resourceVersion (re-read and tried again when the operator's
status updates race the write, as kubectl retries on conflict) and read back to confirm; the objects the
apply created are deleted; nodes the apply kept out of the driver rollout get their label back. A saved driver
DaemonSet (one the apply deleted as left behind by the operator) is re-created when absent; one present again (the
operator's, once the policy asks for it) is left to it, and one the restored policy makes again is waited for
first. :mod:`wizard.cluster.applying.apply` undoes a failed apply with :func:`restore`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wizard.cluster.applying.backup import Backup, ObjectRef, clean, read_backup
from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import LABEL_DEPLOY_DRIVER
from wizard.engine.leftovers import made_again_by

CONFLICT_ATTEMPTS = 5
"""Tries to restore one object when the operator keeps updating it between our read and our write."""
OPERATOR_GRACE_S = 60.0
"""How long a rollback leaves a driver DaemonSet the restored policy makes again to the operator before re-creating it
from the backup (the real operator makes it within seconds of the policy's write; one that is stopped never does)."""
OPERATOR_POLL_S = 1.0


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


async def _restore_daemonset(
    gateway: Gateway, ref: ObjectRef, saved: Mapping[str, Any], *, made_again: bool, grace: float
) -> str:
    """Re-create a driver DaemonSet the apply deleted; one there again (the operator made it) stays as it is. One
    the restored policy has the operator make again (``made_again``) is waited for first, up to ``grace`` seconds:
    re-created beside the operator, it is deleted (it wants no pod yet) and made again, and the policy once stayed
    notReady for minutes after that (the oldest release the lane runs)."""
    if await gateway.read_daemonset(ref.namespace, ref.name) is not None:
        return f"{ref.key} is there already"
    deadline = time.monotonic() + (grace if made_again else 0)
    while time.monotonic() < deadline:
        await asyncio.sleep(OPERATOR_POLL_S)
        if await gateway.read_daemonset(ref.namespace, ref.name) is not None:
            return f"{ref.key} is back: the operator made it again for the restored ClusterPolicy"
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


async def restore(
    gateway: Gateway, backup: Backup, *, only: set[str] | None = None, operator_grace: float = OPERATOR_GRACE_S
) -> list[str]:
    """Make the objects match the backup exactly: replace the saved ones, delete those the apply created.
    ``operator_grace``: how long a driver DaemonSet the restored policy makes again is left to the operator."""
    lines: list[str] = []
    policy = next((o for o in backup.objects if o.get("kind") == "ClusterPolicy"), None)
    policy_restored = policy is not None and (only is None or ObjectRef.of(policy).key in only)
    # the custom resources first: a driver DaemonSet the restored policy makes again is then the operator's to make
    for saved in sorted(backup.objects, key=lambda o: ObjectRef.of(o).daemonset):
        ref = ObjectRef.of(saved)
        if only is not None and ref.key not in only:
            continue
        if ref.daemonset:
            labels = {str(k): str(v) for k, v in ((saved.get("metadata") or {}).get("labels") or {}).items()}
            made_again = policy_restored and made_again_by(policy, labels)
            lines.append(await _restore_daemonset(gateway, ref, saved, made_again=made_again, grace=operator_grace))
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


async def rollback(
    gateway: Gateway, backup: Backup | str | Path, *, operator_grace: float = OPERATOR_GRACE_S
) -> list[str]:
    """Restore exactly what a backup (or backup file) holds (see :func:`restore`)."""
    if not isinstance(backup, Backup):
        backup = await asyncio.to_thread(read_backup, Path(backup))  # a file read and a YAML parse: off the loop
    return await restore(gateway, backup, operator_grace=operator_grace)
