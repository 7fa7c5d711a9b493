"""Preview, apply and roll back the rendered custom resources, without ever half-applying them.

:func:`~wizard.cluster.applying.apply_preview.prepare_apply` (the preview, in its own module) validates locally
against the release's CRD and on the server (server-side apply with ``dryRun=All`` and
``fieldValidation=Strict``), and diffs the server's answer against the live objects. :func:`apply` writes a backup of the live objects (0600, re-appliable YAML)
before touching anything, then applies (and labels the nodes the plan keeps out of the driver rollout,
their labels before kept in the backup). A connection that drops mid-apply is resolved by
re-reading: every object either holds what was applied or, after a rollback from the backup, what
it held before; the result says which. An interrupt does not cut the writes in half (see
:mod:`wizard.cluster.applying.interrupts`). After the objects, the driver DaemonSets the operator leaves behind for
the plan (the preview's ``leftovers``) are deleted, each only as the preview saw it (a uid precondition);
the backup keeps them, so that the undo and ``gpu-wizard rollback`` re-create them.

Field ownership (``docs/safety.md``): a ClusterPolicy the wizard creates is applied whole by the
manager ``gpu-wizard-create``, which never applies again; every later apply sends only the plan's
fields as ``gpu-wizard``. Server-side apply removes the fields a manager stops sending, so the
chart's fields must never belong to ``gpu-wizard``. A conflict with the wizard's own create or
rollback writes is taken over without ``--force-conflicts``, guarded by the resourceVersion seen
in the preview; a conflict with any other manager needs ``--force-conflicts``. A live policy without
``driver.upgradePolicy.podDeletion`` (an earlier gpu-wizard's) gets the chart's, and keeps it
(``render_policy.repair_values``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from wizard.cluster.applying.apply_preview import ApplyPlan, apply_error_text, guarded_apply, same_but_status
from wizard.cluster.applying.backup import Backup, ObjectRef, clean, write_backup
from wizard.cluster.applying.exclusion_labels import label_excluded, labelled_words
from wizard.cluster.applying.interrupts import run_to_end
from wizard.cluster.applying.restore import read_object, restore
from wizard.cluster.errors import ApiError, ClusterError, ConnectionDropped, TimedOut
from wizard.cluster.gateway import FIELD_MANAGER, Gateway
from wizard.retry import APPLY, Retryable, retrying


@dataclass(frozen=True)
class ApplyResult:
    """How an apply ended."""

    state: Literal["applied", "unchanged"]
    """``applied``: every object holds the plan; ``unchanged``: the cluster is as before the apply."""
    backup_path: Path
    objects: list[str]
    """``Kind/name`` of every object involved."""
    created: list[str] = field(default_factory=list)
    message: str = ""
    deleted: list[str] = field(default_factory=list)
    """``DaemonSet/<ns>/<name>`` of every leftover DaemonSet the apply deleted."""

    @property
    def ok(self) -> bool:
        return self.state == "applied"


class ApplyInterrupted(ClusterError):
    """An interrupt arrived during the writes; they were carried to their end first (``result`` says how)."""

    def __init__(self, result: ApplyResult) -> None:
        undo = rollback_command(result.backup_path)
        if result.ok:
            message = f"interrupted during the apply, which was completed first ({result.message})"
            hint = f"to undo it: {undo}"
        else:
            message = f"interrupted during the apply: {result.message}"
            hint = f"the backup is {result.backup_path} ({undo})"
        super().__init__(message, hint)
        self.result = result


def rollback_command(backup_path: Path) -> str:
    """The command that restores a backup."""
    return f"gpu-wizard rollback --backup {backup_path}"


def contains(live: Mapping[str, Any] | None, body: Mapping[str, Any]) -> bool:
    """Every label, annotation and spec leaf of ``body`` has the same value in ``live``."""
    if live is None:
        return False

    def sub(have: Any, want: Any) -> bool:
        if isinstance(want, dict):
            return isinstance(have, dict) and all(sub(have.get(k), v) for k, v in want.items())
        return bool(have == want)

    want = clean(body)
    want["metadata"] = {k: v for k, v in want.get("metadata", {}).items() if k in ("labels", "annotations")}
    have = clean(live)
    return sub(have, want)


def default_backup_name(context: str) -> str:
    """``backup-<context>-<UTC time>.yaml``."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in context) or "cluster"
    return f"backup-{safe}-{stamp}.yaml"


async def apply(gateway: Gateway, prepared: ApplyPlan, *, backup_dir: str | Path) -> ApplyResult:
    """Back up the live objects, then server-side apply every body; never leave a partial apply behind.

    Once the backup is being written, an interrupt (the caller's cancellation) waits until every
    object is applied or restored, then surfaces as :class:`ApplyInterrupted` naming the backup.
    """
    if not prepared.ok:
        raise ClusterError(
            "nothing applied: validation failed: " + "; ".join(prepared.errors),
            "fix the answers (or resolve the conflict), then preview again",
        )
    refs = [ObjectRef.of(obj) for obj in prepared.objects]
    try:
        current = {ref.key: await read_object(gateway, ref) for ref in refs}
    except ClusterError as exc:  # e.g. the API server went away after the diff: say that nothing was written
        exc.message = f"nothing applied: {exc.message}"
        raise
    for ref in refs:
        # The operator's own status reports move the resourceVersion all the time; only the rest counts.
        if not same_but_status(prepared.live.get(ref.key), current[ref.key]):
            raise ClusterError(
                f"nothing applied: {ref.key} changed on the server since the preview",
                "preview again so that the diff you approve is the one applied",
            )
    created = [ref for ref in refs if current[ref.key] is None]
    leftovers = await _leftovers_now(gateway, prepared)
    backup = Backup(
        context=gateway.context,
        server=gateway.server,
        objects=[*(obj for obj in current.values() if obj is not None), *leftovers],
        created=created,
        node_labels=dict(prepared.node_labels),
    )
    phase = _write_phase(gateway, prepared, refs, backup, Path(backup_dir), leftovers)
    result, interrupted = await run_to_end(phase)
    if interrupted:
        raise ApplyInterrupted(result)
    return result


async def _leftovers_now(gateway: Gateway, prepared: ApplyPlan) -> list[dict[str, Any]]:
    """The leftover DaemonSets the preview named, read again: one gone since is skipped; one re-created under its
    name (another uid) is not the one the person approved deleting."""
    found = []
    for leftover in prepared.leftovers:
        try:
            now = await gateway.read_daemonset(prepared.namespace, leftover.name)
        except ClusterError as exc:
            exc.message = f"nothing applied: {exc.message}"
            raise
        if now is None:
            continue
        if leftover.uid and str((now.get("metadata") or {}).get("uid") or "") != leftover.uid:
            raise ClusterError(
                f"nothing applied: DaemonSet {prepared.namespace}/{leftover.name} was re-created since the preview",
                "preview again so that what you approve is what the apply deletes",
            )
        found.append(now)
    return found


async def _write_phase(
    gateway: Gateway,
    prepared: ApplyPlan,
    refs: list[ObjectRef],
    backup: Backup,
    backup_dir: Path,
    leftovers: list[dict[str, Any]],
) -> ApplyResult:
    """Write the backup, apply each object in order, then delete the leftover DaemonSets; on a failure restore
    what was written or deleted and say how it ended."""
    path = await asyncio.to_thread(write_backup, backup_dir, default_backup_name(gateway.context), backup)
    done: list[ObjectRef] = []
    steps: list[tuple[ObjectRef, dict[str, Any] | None]] = [*zip(refs, prepared.objects, strict=True)]
    steps += [(ObjectRef.of(daemonset), None) for daemonset in leftovers]
    deleted: list[str] = []
    for ref, body in steps:
        try:
            if body is None:
                await _delete_leftover(gateway, ref, leftovers)
                deleted.append(ref.key)
            else:
                await _apply_one(gateway, prepared, ref, body)
        except ClusterError as exc:
            restored = await _undo(gateway, backup, [*done, ref])
            conflict = isinstance(exc, ApiError) and exc.status == 409
            failure = apply_error_text(ref.key, exc) if isinstance(exc, ApiError) else exc.message
            if not restored:
                raise ClusterError(
                    f"apply failed ({failure}) and the rollback could not confirm the old state: the cluster "
                    f"may hold part of the change; the backup is {path}",
                    f"run: {rollback_command(path)}",
                ) from None
            if conflict:
                raise ClusterError(
                    f"{failure}; nothing was changed (rolled back and read back)", f"the backup is {path}"
                ) from None
            late = (
                f"; a request that timed out may still be carried out by the server: check again, "
                f"and restore with {rollback_command(path)}"
                if isinstance(exc, TimedOut)
                else ""
            )
            return ApplyResult(
                "unchanged",
                path,
                [r.key for r in refs],
                message=f"apply failed ({failure}); rolled back, the cluster is unchanged{late}",
            )
        done.append(ref)
    try:
        await label_excluded(gateway, prepared.node_labels)  # after the objects: a failed object relabels no node
    except ClusterError as exc:
        undo = {r.key for r in done} | {f"Node/{n}" for n in prepared.node_labels}
        try:
            await restore(gateway, backup, only=undo)
        except ClusterError:
            raise ClusterError(
                f"apply failed ({exc.message}) and the rollback could not confirm the old state; the backup is {path}",
                f"run: {rollback_command(path)}",
            ) from None
        return ApplyResult(
            "unchanged",
            path,
            [r.key for r in refs],
            message=f"apply failed ({exc.message}); rolled back, the cluster is unchanged",
        )
    managers = sorted({prepared.managers.get(r.key, FIELD_MANAGER) for r in refs})
    message = f"applied {', '.join(r.key for r in refs)} (field manager {', '.join(managers)})"
    reasons = {u.name: u.reason for u in prepared.leftovers}
    for key in deleted:
        name = key.rsplit("/", 1)[-1]
        message += f"; deleted DaemonSet {key.removeprefix('DaemonSet/')}, {reasons.get(name, 'left behind')}"
    if prepared.node_labels:
        message += f"; {labelled_words(prepared.node_labels)}"
    return ApplyResult("applied", path, [r.key for r in refs], [r.key for r in backup.created], message, deleted)


async def _delete_leftover(gateway: Gateway, ref: ObjectRef, leftovers: list[dict[str, Any]]) -> None:
    """Delete one leftover DaemonSet, only the object the backup holds (its uid)."""
    saved = next(d for d in leftovers if ObjectRef.of(d) == ref)
    uid = str((saved.get("metadata") or {}).get("uid") or "")
    await gateway.delete_daemonset(ref.namespace, ref.name, uid=uid)


async def _apply_one(gateway: Gateway, prepared: ApplyPlan, ref: ObjectRef, body: dict[str, Any]) -> None:
    """Apply one object; on a dropped connection re-read: applied, or apply once more (SSA is idempotent).

    Taking the wizard's own fields back is guarded by the object the preview saw (``guarded_apply``).
    """
    manager = prepared.managers.get(ref.key, FIELD_MANAGER)

    async def attempt() -> None:
        try:
            if ref.key in prepared.takeover:
                await guarded_apply(gateway, ref, body, prepared.live.get(ref.key), dry_run=False)
            else:
                force = prepared.force_conflicts
                await gateway.apply_custom(*ref.api, ref.name, body, dry_run=False, force=force, field_manager=manager)
        except ConnectionDropped as exc:
            if not contains(await read_object(gateway, ref), body):
                raise Retryable(exc) from None  # not applied: apply once more

    await retrying(APPLY, attempt, stats=gateway.stats)


async def _undo(gateway: Gateway, backup: Backup, refs: list[ObjectRef]) -> bool:
    """Put ``refs`` back to the backup; True when a re-read confirms each one."""
    try:
        await restore(gateway, backup, only={r.key for r in refs})
    except ClusterError:
        return False
    return True
