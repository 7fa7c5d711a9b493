"""Finding and removing what host probes left behind (``gpu-wizard cleanup``).

A run removes its DaemonSet (or probe pod) itself, also on Ctrl-C; a killed process cannot. Every
probe object carries the owner labels of :data:`wizard.cluster.probes.probeset.OWNER_SELECTOR`, so they
are found by label in every namespace the user may list (else in the operator namespace). The
deadline Jobs and DaemonSets go first (background propagation), then every probe pod still there (a bare probe
pod, or a DaemonSet's pod the garbage collector has not reached yet), at once (grace period 0),
so that a second run finds nothing.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from wizard.cluster.errors import ApiError, ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.probes.probeset import OWNER_SELECTOR, RUN_LABEL

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session


@dataclass(frozen=True)
class Found:
    """One probe object, and what became of it."""

    kind: str
    """``job`` (a run's deadline anchor), ``daemonset`` or ``pod``."""
    namespace: str
    name: str
    node: str = ""
    run: str = ""
    error: str = ""
    """Why it could not be removed ("" when it was, or would be on a dry run)."""

    @property
    def command(self) -> str:
        return shlex.join(["kubectl", "delete", self.kind, "-n", self.namespace, self.name])


async def _listed(gateway: Gateway, resource: str, namespace: str) -> tuple[list[dict[str, object]], str]:
    """The probe objects of a kind, and where they were looked for."""
    try:
        return await gateway.list_everywhere(resource, label_selector=OWNER_SELECTOR), "every namespace"
    except ApiError as exc:
        if exc.status != 403:
            raise
    listing = {"pods": gateway.list_pods, "daemonsets": gateway.list_daemonsets, "jobs": gateway.list_jobs}[resource]
    return await listing(namespace, label_selector=OWNER_SELECTOR), f"namespace {namespace}"


async def clean_up(gateway: Gateway, namespace: str, *, dry_run: bool) -> tuple[list[Found], str]:
    """Remove (or, ``dry_run``, list) every probe DaemonSet and pod: (what was found, where it was looked for)."""
    found: list[Found] = []
    where = ""
    for kind, resource in (("job", "jobs"), ("daemonset", "daemonsets")):  # owners first: the GC follows them
        owners, where = await _listed(gateway, resource, namespace)
        for owner in owners:
            meta = owner["metadata"]
            assert isinstance(meta, dict)
            item = Found(kind, str(meta.get("namespace") or ""), str(meta["name"]), run=_run(meta))
            found.append(await _remove(gateway, item, dry_run))
    pods, _ = await _listed(gateway, "pods", namespace)
    for pod in pods:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        assert isinstance(meta, dict) and isinstance(spec, dict)
        if meta.get("deletionTimestamp") and not dry_run:
            continue  # on its way out already
        node = str(spec.get("nodeName") or "")
        item = Found("pod", str(meta.get("namespace") or ""), str(meta["name"]), node=node, run=_run(meta))
        found.append(await _remove(gateway, item, dry_run))
    return found, where


async def clean_up_cluster(session: Session, *, dry_run: bool) -> tuple[list[Found], str]:
    """:func:`clean_up`, looking in the operator namespace where every namespace cannot be listed
    (``gpu-operator`` when even that cannot be found)."""
    try:
        namespace = await session.namespace()
    except ClusterError:
        namespace = "gpu-operator"
    return await clean_up(session.gateway, namespace, dry_run=dry_run)


def _run(meta: dict[str, object]) -> str:
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    assert isinstance(labels, dict) and isinstance(notes, dict)
    return str(labels.get(RUN_LABEL) or notes.get("gpu-wizard/run") or "")


async def _remove(gateway: Gateway, item: Found, dry_run: bool) -> Found:
    if dry_run:
        return item
    try:
        if item.kind == "job":
            await gateway.delete_job(item.namespace, item.name)
        elif item.kind == "daemonset":
            await gateway.delete_daemonset(item.namespace, item.name)
        else:
            await gateway.delete_pod(item.namespace, item.name)
    except ClusterError as exc:
        return Found(item.kind, item.namespace, item.name, item.node, item.run, exc.message)
    return item
