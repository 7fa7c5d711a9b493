"""Carries out a Helm-owned change: back up, ``helm upgrade`` with the change's values, then the leftovers.

A ClusterPolicy a Helm release owns changes through the release (:mod:`wizard.cluster.applying.helm_values` composes
the values). Where the ``helm`` binary is on PATH the wizard runs that ``helm upgrade`` itself (an argv,
never a script; ``--wait`` off, the rollout is followed as after a direct apply), applies the NVIDIADriver
CRs the chart does not deploy, and then deletes the driver DaemonSets the operator leaves behind for the
plan (:mod:`wizard.engine.leftovers`: the per-kernel ones when the driver is disabled, an NVIDIADriver's
when the CRD mode goes off), each only as the preview saw it (its uid). The backup, written before
anything changes, keeps the live policy and those DaemonSets, so ``gpu-wizard rollback`` re-creates them;
the same deletions a direct apply makes (:mod:`wizard.cluster.applying.apply`). Last, the nodes the plan keeps out of the
driver rollout are labelled, as after a direct apply (:mod:`wizard.cluster.applying.exclusion_labels`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.cluster.applying.apply import default_backup_name
from wizard.cluster.applying.backup import Backup, write_backup
from wizard.cluster.applying.exclusion_labels import label_excluded, labelled_words
from wizard.cluster.applying.helm_values import HelmChange
from wizard.cluster.applying.operator_install import run_helm
from wizard.cluster.core.leftover_sets import find_left_behind
from wizard.cluster.core.preflight import DRIVERS
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.leftovers import Unwanted
from wizard.engine.render import Rendered
from wizard.engine.textsafe import printable, shell_command


@dataclass(frozen=True)
class HelmRun:
    """How a Helm-owned change ended."""

    ok: bool
    message: str
    """One line: what was done (helm's last lines when it failed)."""
    command: str
    backup_path: Path | None = None
    deleted: list[str] = field(default_factory=list)
    """``DaemonSet/<ns>/<name>`` of every leftover DaemonSet deleted."""


async def helm_leftovers(
    gateway: Gateway, rendered: Rendered, namespace: str
) -> tuple[list[Unwanted], dict[str, dict[str, Any]]]:
    """The driver DaemonSets the operator leaves behind once the release carries ``rendered``'s policy."""
    return await find_left_behind(gateway, rendered.plan, namespace, rendered.cluster_policy)


async def upgrade_through_helm(
    gateway: Gateway,
    *,
    helm: str,
    argv: Sequence[str],
    change: HelmChange,
    rendered: Rendered,
    live_policy: Mapping[str, Any] | None,
    leftovers: Sequence[Unwanted],
    namespace: str,
    backup_dir: Path,
) -> HelmRun:
    """Back up the live policy and the leftovers, run ``helm upgrade`` (``argv``, its first word replaced by
    ``helm``), apply the extra NVIDIADrivers, delete the leftovers (uid preconditions), then label the excluded
    nodes (``change.node_labels``; the backup keeps their values before)."""
    command = shell_command(list(argv))
    kept = []
    for leftover in leftovers:  # read again: one gone since is skipped, one re-created is not the one approved
        now = await gateway.read_daemonset(namespace, leftover.name)
        if now is None:
            continue
        if leftover.uid and str((now.get("metadata") or {}).get("uid") or "") != leftover.uid:
            return HelmRun(
                False,
                f"nothing applied: DaemonSet {namespace}/{leftover.name} was re-created since the preview",
                command,
            )
        kept.append(now)
    backup = Backup(
        context=gateway.context,
        server=gateway.server,
        objects=[*([dict(live_policy)] if live_policy else []), *kept],
        created=[],
        node_labels=dict(change.node_labels),
    )
    path = await asyncio.to_thread(write_backup, backup_dir, default_backup_name(gateway.context), backup)
    await asyncio.to_thread(change.write)
    code, output = await run_helm([helm, *argv[1:]])
    if code != 0:
        tail = " | ".join(line.strip() for line in printable(output).splitlines()[-3:] if line.strip())
        return HelmRun(False, f"nothing applied: helm exited {code}: {tail}", command, path)
    message = f"helm upgraded release {change.owner.release} (namespace {change.owner.namespace})"
    wanted = set(change.driver_names)
    for doc in (d for d in rendered.nvidia_drivers if d["metadata"]["name"] in wanted):
        await gateway.apply_custom(*DRIVERS, doc["metadata"]["name"], doc, dry_run=False)
        message += f"; applied NVIDIADriver {doc['metadata']['name']}"
    reasons = {u.name: u.reason for u in leftovers}
    deleted: list[str] = []
    for daemonset in kept:
        meta = daemonset["metadata"]
        try:
            await gateway.delete_daemonset(namespace, meta["name"], uid=str(meta.get("uid") or ""))
        except ClusterError as exc:
            return HelmRun(
                False,
                f"helm upgraded the release, but deleting DaemonSet {namespace}/{meta['name']} failed: {exc.message}",
                command,
                path,
                deleted,
            )
        deleted.append(f"DaemonSet/{namespace}/{meta['name']}")
        message += f"; deleted DaemonSet {namespace}/{meta['name']}, {reasons.get(meta['name'], 'left behind')}"
    try:  # last, as after a direct apply: a failed upgrade relabels no node
        labelled = await label_excluded(gateway, (node for node, _ in change.node_labels))
    except ClusterError as exc:
        return HelmRun(False, f"helm upgraded the release, but {exc.message}", command, path, deleted)
    if labelled:
        message += f"; {labelled_words(labelled)}"
    return HelmRun(True, message, command, path, deleted)
