"""Preview, apply and roll back the rendered custom resources, without ever half-applying them.

:func:`prepare_apply` validates locally against the release's CRD and on the server (server-side
apply with ``dryRun=All`` and ``fieldValidation=Strict``), and diffs the server's answer against
the live objects. :func:`apply` writes a backup of the live objects (0600, re-appliable YAML)
before touching anything, then applies. A connection that drops mid-apply is resolved by
re-reading: every object either holds what was applied or, after a rollback from the backup, what
it held before; the result says which. An interrupt does not cut the writes in half (see
:mod:`wizard.cluster.interrupts`).

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
import copy
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from wizard.cluster.backup import Backup, ObjectRef, clean, write_backup
from wizard.cluster.errors import ApiError, ClusterError, ConnectionDropped, TimedOut
from wizard.cluster.gateway import FIELD_MANAGER, Gateway
from wizard.cluster.interrupts import run_to_end
from wizard.cluster.preflight import POLICY, active_policy
from wizard.cluster.restore import read_object, restore
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, owned_paths, to_yaml, validate_against_crd
from wizard.engine.render_policy import (
    POD_DELETION,
    UPGRADE_POLICY,
    owned_values,
    patch_policy,
    repair_values,
    set_path,
)
from wizard.retry import APPLY, Retryable, retrying

CREATE_MANAGER = "gpu-wizard-create"
"""The field manager of the one apply that creates a ClusterPolicy whole (chart defaults included)."""
OWN_MANAGERS = frozenset({FIELD_MANAGER, CREATE_MANAGER})
"""Managers whose fields are the wizard's own: its create, and its rollbacks (``gpu-wizard`` updates)."""


@dataclass
class ApplyPlan:
    """What an apply would do, checked by the server but not yet persisted."""

    objects: list[dict[str, Any]]
    """The server-side-apply bodies, in apply order (ClusterPolicy first)."""
    live: dict[str, dict[str, Any] | None]
    """Live object per ``Kind/name`` (None: the apply creates it)."""
    diff: str
    """Unified diff of YAML, live -> after apply (owned fields only for a patched ClusterPolicy)."""
    errors: list[str]
    dry_run: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The server's dry-run answer per ``Kind/name``."""
    preinstalled: bool = False
    """The ClusterPolicy disables the containerized driver (pre-installed host driver)."""
    force_conflicts: bool = False
    plan: Plan | None = None
    managers: dict[str, str] = field(default_factory=dict)
    """The field manager per ``Kind/name`` (default ``gpu-wizard``; a new ClusterPolicy: ``gpu-wizard-create``)."""
    takeover: set[str] = field(default_factory=set)
    """``Kind/name`` whose fields the wizard takes back from its own create or rollback writes (forced apply)."""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def changed(self) -> bool:
        """Applying would change something."""
        return bool(self.diff)


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


def _strip(obj: Mapping[str, Any] | None, only: Iterable[tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The part of an object worth diffing: identity, labels, annotations and spec (optionally only some paths)."""
    if not obj:
        return {}
    cleaned = clean(obj)
    if only is None:
        return cleaned
    spec: dict[str, Any] = {}
    for path in only:
        node: Any = cleaned.get("spec") or {}
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        target = spec
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = node
    return {k: v for k, v in cleaned.items() if k != "spec"} | {"spec": spec}


def _yaml_lines(obj: Mapping[str, Any]) -> list[str]:
    return to_yaml([obj]).splitlines(keepends=True) if obj else []


def unified_diff(before: Mapping[str, Any], after: Mapping[str, Any], key: str) -> str:
    """``diff -u`` of two objects' YAML."""
    lines = difflib.unified_diff(
        _yaml_lines(before), _yaml_lines(after), fromfile=f"live/{key}", tofile=f"planned/{key}"
    )
    return "".join(lines)


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


def _skip_empty_repo_config(body: dict[str, Any], live: Mapping[str, Any], owned: list[tuple[str, ...]]) -> None:
    """Send the empty repoConfig (which clears a stale ConfigMap name) only when the live policy names one.

    Otherwise the diff would show ``+ repoConfig: configMapName: ''``, a change that changes nothing.
    """
    live_repo = (((clean(dict(live)).get("spec") or {}).get("driver") or {}).get("repoConfig")) or {}
    driver = body.get("spec", {}).get("driver") or {}
    if not live_repo.get("configMapName") and (driver.get("repoConfig") or {}).get("configMapName") == "":
        driver.pop("repoConfig", None)
        owned[:] = [path for path in owned if path[:2] != ("driver", "repoConfig")]


async def prepare_apply(gateway: Gateway, rendered: Rendered, *, force_conflicts: bool = False) -> ApplyPlan:
    """Decide the bodies, validate them locally and on the server (dry-run), and diff against the live objects."""
    plan = rendered.plan
    # CPU work off the event loop (the TUI's): loading the CRD schema and validating, then the YAML diffs
    errors = await asyncio.to_thread(local_errors, rendered)

    live_policy = active_policy(await gateway.list_custom(*POLICY))
    owned: list[tuple[str, ...]] | None = None
    managers: dict[str, str] = {}
    if live_policy is not None:
        body = patch_policy(plan, rendered.toolkit_install_dir, rendered.toolkit_env)
        body["metadata"]["name"] = live_policy["metadata"]["name"]
        owned = owned_paths(plan, rendered.toolkit_env)
        if _created_whole_by_wizard(live_policy):
            # An earlier gpu-wizard created the policy as gpu-wizard: sending only the plan's fields
            # would drop the chart's. Keep sending what that manager owns, at the live values.
            spec = clean(live_policy).get("spec") or {}
            for path, value in owned_values(plan, rendered.toolkit_install_dir, rendered.toolkit_env):
                set_path(spec, path, value)
            body["spec"] = spec
        _skip_empty_repo_config(body, live_policy, owned)
        owns = _applied_by_wizard(live_policy, POD_DELETION)
        owns_policy = _applied_by_wizard(live_policy, (*UPGRADE_POLICY, "maxParallelUpgrades"))
        repairs = repair_values(
            plan,
            clean(live_policy).get("spec") or {},
            wizard_owns_pod_deletion=owns,
            wizard_owns_upgrade_policy=owns_policy,
        )
        for path, value in repairs:
            set_path(body["spec"], path, value)
            owned.append(path)
    else:  # created whole by a manager that never applies again (see the module's docstring)
        body = copy.deepcopy(rendered.cluster_policy)
        managers[ObjectRef.of(body).key] = CREATE_MANAGER
    objects = [body, *(copy.deepcopy(d) for d in rendered.nvidia_drivers)]

    live: dict[str, dict[str, Any] | None] = {}
    dry_run: dict[str, dict[str, Any]] = {}
    takeover: set[str] = set()
    diffs: list[str] = []
    for obj in objects:
        ref = ObjectRef.of(obj)
        current = live_policy if ref.kind == "ClusterPolicy" else await gateway.get_custom(*ref.api, ref.name)
        live[ref.key] = current
        manager = managers.get(ref.key, FIELD_MANAGER)
        try:
            try:
                answer = await gateway.apply_custom(
                    *ref.api, ref.name, obj, dry_run=True, force=force_conflicts, field_manager=manager
                )
            except ApiError as exc:
                if not _own_conflict(exc) or current is None:
                    raise
                # Fields the wizard itself wrote (its create, a rollback): take them back, but only
                # from the object the preview saw (a resourceVersion precondition).
                obj.setdefault("metadata", {})["resourceVersion"] = _version(current)
                takeover.add(ref.key)
                answer = await gateway.apply_custom(*ref.api, ref.name, obj, dry_run=True, force=True)
        except ApiError as exc:
            errors.append(_apply_error_text(ref.key, exc))
            continue
        dry_run[ref.key] = answer
        only = owned if (ref.kind == "ClusterPolicy" and current is not None) else None
        diffs.append(await asyncio.to_thread(_diff, current, answer, only, ref.key))
    driver_spec = (body.get("spec") or {}).get("driver") or {}
    return ApplyPlan(
        objects=objects,
        live=live,
        diff="".join(diffs),
        errors=errors,
        dry_run=dry_run,
        preinstalled=driver_spec.get("enabled") is False,
        force_conflicts=force_conflicts,
        plan=plan,
        managers=managers,
        takeover=takeover,
    )


def local_errors(rendered: Rendered) -> list[str]:
    """The rendered objects' errors against their release's CRD, each prefixed with ``Kind[/name]``."""
    bundle = rendered.plan.operator.bundle
    errors = [f"ClusterPolicy: {e}" for e in validate_against_crd(rendered.cluster_policy, bundle)]
    for driver in rendered.nvidia_drivers:
        errors += [f"NVIDIADriver/{driver['metadata']['name']}: {e}" for e in validate_against_crd(driver, bundle)]
    return errors


def _diff(
    current: Mapping[str, Any] | None, answer: Mapping[str, Any], only: list[tuple[str, ...]] | None, key: str
) -> str:
    return unified_diff(_strip(current, only), _strip(answer, only), key)


def _created_whole_by_wizard(live: Mapping[str, Any]) -> bool:
    """Whether ``gpu-wizard`` applied the chart's fields too (a policy created before ``gpu-wizard-create``)."""
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if isinstance(entry, dict) and entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Apply":
            spec = (entry.get("fieldsV1") or {}).get("f:spec") or {}
            if "f:daemonsets" in spec:
                return True
    return False


def _applied_by_wizard(live: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the ``gpu-wizard`` manager's apply owns ``spec.<path>`` (so it must keep sending it)."""
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if isinstance(entry, dict) and entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Apply":
            node: Any = (entry.get("fieldsV1") or {}).get("f:spec")
            for part in path:
                node = node.get(f"f:{part}") if isinstance(node, dict) else None
            if node is not None:
                return True
    return False


def _own_conflict(exc: ApiError) -> bool:
    """A server-side-apply conflict with the wizard's own managers only."""
    return exc.status == 409 and bool(exc.field_managers) and set(exc.field_managers) <= OWN_MANAGERS


def _apply_error_text(key: str, exc: ApiError) -> str:
    if exc.status == 409 and exc.field_managers:
        fields = ", ".join(str(c.get("field") or "") for c in exc.causes if c.get("field"))
        return (
            f"{key}: conflict with field manager {', '.join(repr(m) for m in exc.field_managers)}"
            f"{f' over {fields}' if fields else ''}; another tool manages these fields "
            "(re-run with --force-conflicts to take them over)"
        )
    return f"{key}: {exc.message}"


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
    current = {ref.key: await read_object(gateway, ref) for ref in refs}
    for ref in refs:
        before, now = prepared.live.get(ref.key), current[ref.key]
        if _version(before) != _version(now):
            raise ClusterError(
                f"nothing applied: {ref.key} changed on the server since the preview",
                "preview again so that the diff you approve is the one applied",
            )
    created = [ref for ref in refs if current[ref.key] is None]
    backup = Backup(
        context=gateway.context,
        server=gateway.server,
        objects=[obj for obj in current.values() if obj is not None],
        created=created,
    )
    result, interrupted = await run_to_end(_write_phase(gateway, prepared, refs, backup, Path(backup_dir)))
    if interrupted:
        raise ApplyInterrupted(result)
    return result


async def _write_phase(
    gateway: Gateway, prepared: ApplyPlan, refs: list[ObjectRef], backup: Backup, backup_dir: Path
) -> ApplyResult:
    """Write the backup, apply each object in order; on a failure restore the applied ones and say how it ended."""
    path = await asyncio.to_thread(write_backup, backup_dir, default_backup_name(gateway.context), backup)
    done: list[ObjectRef] = []
    for ref, body in zip(refs, prepared.objects, strict=True):
        force = prepared.force_conflicts or ref.key in prepared.takeover
        manager = prepared.managers.get(ref.key, FIELD_MANAGER)
        try:
            await _apply_one(gateway, ref, body, force, manager)
        except ClusterError as exc:
            restored = await _undo(gateway, backup, [*done, ref])
            conflict = isinstance(exc, ApiError) and exc.status == 409
            failure = _apply_error_text(ref.key, exc) if isinstance(exc, ApiError) else exc.message
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
    managers = sorted({prepared.managers.get(r.key, FIELD_MANAGER) for r in refs})
    message = f"applied {', '.join(r.key for r in refs)} (field manager {', '.join(managers)})"
    return ApplyResult("applied", path, [r.key for r in refs], [r.key for r in backup.created], message)


def _version(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


async def _apply_one(gateway: Gateway, ref: ObjectRef, body: Mapping[str, Any], force: bool, manager: str) -> None:
    """Apply one object; on a dropped connection re-read: applied, or apply once more (SSA is idempotent)."""

    async def attempt() -> None:
        try:
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
