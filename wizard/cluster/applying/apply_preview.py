"""Preview an apply: the bodies to send, checked locally and by the server, and the diff against the live objects.

:func:`prepare_apply` decides each body by field ownership (see :mod:`wizard.cluster.applying.apply`'s
docstring: a new ClusterPolicy is created whole by ``gpu-wizard-create``, a live one gets only the
plan's fields, repaired where an earlier gpu-wizard left a field out), validates it against the
release's CRD and on the server (server-side apply with ``dryRun=All`` and ``fieldValidation=Strict``),
takes back fields from the wizard's own earlier writes under a resourceVersion precondition, and diffs
the server's answer against the live object (owned fields only for a patched ClusterPolicy), and names the
driver DaemonSets the operator will leave behind once the policy is applied (:mod:`wizard.engine.leftovers`),
which the apply deletes. Nothing here writes; :func:`wizard.cluster.applying.apply.apply` carries an :class:`ApplyPlan` out.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.cluster.applying.backup import ObjectRef, clean
from wizard.cluster.applying.exclusion_labels import excluded_node_labels
from wizard.cluster.core.leftover_sets import find_left_behind
from wizard.cluster.core.preflight import POLICY, active_policy
from wizard.cluster.errors import ApiError
from wizard.cluster.gateway import FIELD_MANAGER, Gateway
from wizard.engine.exclusion import label_diff
from wizard.engine.leftovers import Unwanted
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, crd_errors, owned_paths, to_yaml
from wizard.engine.render_policy import (
    POD_DELETION,
    UPGRADE_POLICY,
    owned_values,
    patch_policy,
    repair_values,
    set_path,
)

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
    namespace: str = ""
    """The operator's namespace, where the driver DaemonSets are."""
    leftovers: list[Unwanted] = field(default_factory=list)
    """Driver DaemonSets the operator leaves behind for this plan: the apply deletes them after the policy's write."""
    leftover_objects: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Their live objects by name, as the preview read them (the backup keeps them)."""
    node_labels: dict[str, str | None] = field(default_factory=dict)
    """Nodes kept out of the driver rollout that the apply labels ``nvidia.com/gpu.deploy.driver=false``, each with
    its value before (None: absent), which the backup keeps and a rollback puts back."""

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def changed(self) -> bool:
        """Applying would change something (the objects, or a leftover DaemonSet to delete)."""
        return bool(self.diff) or bool(self.leftovers)

    @property
    def deletions(self) -> list[str]:
        """``delete DaemonSet <ns>/<name>, left by the operator when …``: one line per leftover the apply deletes."""
        return [u.deletion(self.namespace) for u in self.leftovers]

    @property
    def holds_driver(self) -> bool:
        """The live objects already ask for the plan's driver (every field that decides a node's image), whatever
        else the apply would change: then verification needs no apply first (the rule verification itself uses).
        Never while a leftover DaemonSet is to be deleted: its driver pods fail verification until the apply."""
        from wizard.cluster.core.operator_status import plan_held

        if self.leftovers:
            return False

        kinds: dict[str, list[dict[str, Any]]] = {}
        for body in self.objects:
            kinds.setdefault(str(body.get("kind")), []).append(body)
        policy = next((self.live[k] for k in self.live if k.startswith("ClusterPolicy/")), None)
        if not self.ok or policy is None or not kinds.get("ClusterPolicy"):
            return False
        live_drivers = [body for key, body in self.live.items() if key.startswith("NVIDIADriver/") and body]
        return plan_held(kinds["ClusterPolicy"][0], kinds.get("NVIDIADriver", []), policy, live_drivers) is None


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


def _skip_empty_repo_config(body: dict[str, Any], live: Mapping[str, Any], owned: list[tuple[str, ...]]) -> None:
    """Send the empty repoConfig (which clears a stale ConfigMap name) only when the live policy names one.

    Otherwise the diff would show ``+ repoConfig: configMapName: ''``, a change that changes nothing.
    """
    live_repo = (((clean(dict(live)).get("spec") or {}).get("driver") or {}).get("repoConfig")) or {}
    driver = body.get("spec", {}).get("driver") or {}
    if not live_repo.get("configMapName") and (driver.get("repoConfig") or {}).get("configMapName") == "":
        driver.pop("repoConfig", None)
        owned[:] = [path for path in owned if path[:2] != ("driver", "repoConfig")]


async def prepare_apply(
    gateway: Gateway, rendered: Rendered, *, force_conflicts: bool = False, namespace: str = ""
) -> ApplyPlan:
    """Decide the bodies, validate them locally and on the server (dry-run), and diff against the live objects;
    in ``namespace`` (the operator's), find the driver DaemonSets the operator leaves behind for the plan."""
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
                takeover.add(ref.key)
                answer = await guarded_apply(gateway, ref, obj, current, dry_run=True)
        except ApiError as exc:
            errors.append(apply_error_text(ref.key, exc))
            continue
        dry_run[ref.key] = answer
        only = owned if (ref.kind == "ClusterPolicy" and current is not None) else None
        diffs.append(await asyncio.to_thread(_diff, current, answer, only, ref.key))
    node_labels = await excluded_node_labels(gateway, plan, errors)
    diffs.append(label_diff(node_labels))
    driver_spec = (body.get("spec") or {}).get("driver") or {}
    leftovers: list[Unwanted] = []
    leftover_objects: dict[str, dict[str, Any]] = {}
    policy_after = dry_run.get(ObjectRef.of(body).key)
    if policy_after is not None:  # judged on the policy as the server would hold it (a pre-installed plan keeps
        # the live useNvidiaDriverCRD)
        leftovers, leftover_objects = await find_left_behind(gateway, plan, namespace, policy_after)
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
        namespace=namespace,
        leftovers=leftovers,
        leftover_objects=leftover_objects,
        node_labels=node_labels,
    )


async def install_preview(gateway: Gateway, rendered: Rendered) -> ApplyPlan:
    """What installing the operator creates, checked locally against the release's CRDs (no server dry-run:
    the CRDs come with the chart); every object is new, its diff the whole object. The excluded nodes are read:
    the install labels them before the operator's first reconcile."""
    objects = rendered.documents()
    keys = [f"{o['kind']}/{o['metadata']['name']}" for o in objects]
    errors = local_errors(rendered)
    node_labels = await excluded_node_labels(gateway, rendered.plan, errors)
    diff = "".join(unified_diff({}, o, key) for o, key in zip(objects, keys, strict=True))
    return ApplyPlan(
        objects=objects,
        live=dict.fromkeys(keys),
        diff=diff + label_diff(node_labels),
        errors=errors,
        preinstalled=not rendered.plan.driver_enabled,
        plan=rendered.plan,
        node_labels=node_labels,
    )


def local_errors(rendered: Rendered) -> list[str]:
    """The rendered objects' errors against their release's CRD, each prefixed with ``Kind[/name]``."""
    return crd_errors(rendered)


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


def apply_error_text(key: str, exc: ApiError) -> str:
    if exc.status == 409 and exc.field_managers:
        fields = ", ".join(str(c.get("field") or "") for c in exc.causes if c.get("field"))
        return (
            f"{key}: conflict with field manager {', '.join(repr(m) for m in exc.field_managers)}"
            f"{f' over {fields}' if fields else ''}; another tool manages these fields "
            "(re-run with --force-conflicts to take them over)"
        )
    return f"{key}: {exc.message}"


def resource_version(obj: Mapping[str, Any] | None) -> str:
    """An object's ``metadata.resourceVersion`` (empty for none): what the preview saw, to compare or to guard a write."""
    return str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")


GUARD_ATTEMPTS = 5
"""How often a guarded write follows an object that moved only by its status before it gives up."""


def same_but_status(seen: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> bool:
    """Whether ``now`` is ``seen`` but for its status and server stamps: the diff the user approved still holds.

    The operator reports its progress in the ClusterPolicy's status all the time (during an upgrade,
    every few seconds), and each report moves the resourceVersion. Labels, annotations, spec and who
    owns which field (outside the status) must not have moved.
    """
    if seen is None or now is None:
        return seen is None and now is None
    return clean(seen) == clean(now) and _owners(seen) == _owners(now)


def _owners(obj: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The field managers of everything but the status, without their time stamps."""
    owners = []
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource") == "status":
            continue
        fields = dict(entry.get("fieldsV1") or {})
        fields.pop("f:status", None)
        if not fields:
            continue
        owners.append((str(entry.get("manager")), str(entry.get("operation")), json.dumps(fields, sort_keys=True)))
    return sorted(owners)


async def guarded_apply(
    gateway: Gateway, ref: ObjectRef, body: dict[str, Any], seen: Mapping[str, Any] | None, *, dry_run: bool
) -> dict[str, Any]:
    """Take the wizard's own fields back (a forced apply) only from the object as ``seen``.

    The write carries ``seen``'s resourceVersion as its precondition. When the server refuses it
    (409, the object was modified) and a fresh read shows only the status moved, the write is sent
    again under the fresh resourceVersion; any other change is the server's refusal, as it said.
    """
    current, refused = seen, 0
    while True:
        body.setdefault("metadata", {})["resourceVersion"] = resource_version(current)
        try:
            return await gateway.apply_custom(*ref.api, ref.name, body, dry_run=dry_run, force=True)
        except ApiError as exc:
            refused += 1
            if exc.status != 409 or exc.field_managers or refused >= GUARD_ATTEMPTS:
                raise
            fresh = await gateway.get_custom(*ref.api, ref.name)
            if not same_but_status(seen, fresh):
                raise
            current = fresh
