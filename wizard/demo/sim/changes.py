"""What a write to the store sets off in the simulation: a full tick, or a light one over what it touched.

Most of a verification's writes (a Job, the wizard's probe DaemonSet and its pods, bare pods) concern nothing
the operator reads; a light tick handles them in O(what changed) instead of stepping every pod.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wizard.demo.api.store import Key, Store, WatchEvent
from wizard.demo.sim.controllers import Eligible, daemonset_sync, reconcile_jobs
from wizard.demo.sim.operands import DEVICE_PLUGIN_DS, TOOLKIT_DS, VALIDATOR_DS
from wizard.demo.sim.simutil import Pacer, Writer, controller_uid, read
from wizard.demo.sim.world import pod_ready

#: Owners whose objects the operator simulation reconciles.
OPERATOR_KINDS = frozenset({"ClusterPolicy", "NVIDIADriver"})
#: ``app`` labels of the pods the operator simulation and the node views look at.
OPERAND_APPS = frozenset({TOOLKIT_DS, DEVICE_PLUGIN_DS, VALIDATOR_DS, "gpu-operator"})
#: DaemonSets the node views look up by name (what the toolkit mounts, whether a plugin runs).
_OPERAND_DAEMONSETS = OPERAND_APPS
#: Resources nothing in the simulation reads (the kubelet only records Events).
_UNREAD = frozenset({"events"})


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def operand_labelled(obj: dict[str, Any]) -> bool:
    """Labelled like an operator component (the node views and the operator find those by label)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return "app.kubernetes.io/component" in labels or labels.get("app") in OPERAND_APPS


def plain_daemonset(ds: dict[str, Any]) -> bool:
    """A DaemonSet only Kubernetes' DaemonSet controller acts on: no operator owns it and it is none of
    the operands the node views look for."""
    meta = ds.get("metadata") or {}
    return (
        not operand_labelled(ds)
        and meta.get("name") not in _OPERAND_DAEMONSETS
        and all(ref.get("kind") not in OPERATOR_KINDS for ref in meta.get("ownerReferences") or [])
    )


_OWNER_RESOURCES = {
    "ClusterPolicy": "clusterpolicies",
    "NVIDIADriver": "nvidiadrivers",
    "Job": "jobs",
    "DaemonSet": "daemonsets",
}


def _owner_exists(store: Store, ref: dict[str, Any], namespace: str) -> bool:
    """The object an ownerReference names still exists (same uid); owners the store cannot hold count as present."""
    resource = _OWNER_RESOURCES.get(str(ref.get("kind") or ""))
    if resource is None:
        return True
    scoped = None if resource in ("clusterpolicies", "nvidiadrivers") else namespace
    found = store.lookup(resource, str(ref.get("name") or ""), scoped)
    return found is not None and found["metadata"].get("uid") == ref.get("uid")


def collect_dependents(writer: Writer, uid: str) -> None:
    """:func:`controllers.collect_garbage` for one owner that went away (``uid``): the DaemonSets it owned that have no
    owner left, and the pods it controlled."""
    store = writer.store
    for resource, obj in store.dependents(uid):
        meta = obj["metadata"]
        namespace = str(meta.get("namespace") or "")
        refs = meta.get("ownerReferences") or []
        if resource == "daemonsets":
            owners = [r for r in refs if r.get("kind") in ("ClusterPolicy", "NVIDIADriver", "Job")]
            if not any(_owner_exists(store, r, namespace) for r in owners):
                writer.delete("daemonsets", meta["name"], namespace)
        elif resource == "pods" and controller_uid(obj) == uid:
            ref = next(r for r in refs if r.get("uid") == uid)
            if not _owner_exists(store, ref, namespace):
                writer.delete("pods", meta["name"], namespace)


@dataclass(frozen=True)
class PlainPod:
    """A pod only the kubelet (and its DaemonSet's controller) acts on; ``owner``: that DaemonSet's key
    while it exists, ``orphaned``: the uid of its owner when that is gone (the garbage collector's turn)."""

    owner: Key | None = None
    orphaned: str = ""


def plain_pod(
    pod: dict[str, Any], store: Store, plain_owner: Callable[[dict[str, Any]], bool] = plain_daemonset
) -> PlainPod | None:
    """How a bound pod that no operator controller reads depends on other objects; None for any other pod
    (unscheduled, operand-labelled, owned by a ReplicaSet, or by a DaemonSet an operator owns)."""
    meta = pod.get("metadata") or {}
    if not (pod.get("spec") or {}).get("nodeName") or operand_labelled(pod):
        return None
    refs = meta.get("ownerReferences") or []
    if not refs:
        return PlainPod()
    if len(refs) != 1 or refs[0].get("kind") != "DaemonSet":
        return None
    namespace = str(meta.get("namespace") or "")
    owner = store.lookup("daemonsets", str(refs[0].get("name") or ""), namespace)
    if owner is None or owner["metadata"].get("uid") != refs[0].get("uid"):
        return PlainPod(orphaned=str(refs[0].get("uid") or ""))
    return PlainPod(owner=_key(owner)) if plain_owner(owner) else None


def _same_ties(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """``new`` is ``old`` with another status: the same spec, labels and owners (the kubelet's writes share them)."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (
        old.get("spec") is new.get("spec")
        and old_meta.get("labels") is new_meta.get("labels")
        and old_meta.get("ownerReferences") is new_meta.get("ownerReferences")
    )


@dataclass
class Changes:
    """What changed since the last tick looked, by what it sets off."""

    full: bool = True
    """Something a full tick must look at changed (also at start: nothing was looked at yet)."""
    pods: set[Key] = field(default_factory=set)
    """Plain pods the kubelet steps."""
    daemonsets: set[Key] = field(default_factory=set)
    """Plain DaemonSets whose controller runs (the DaemonSet or one of its pods changed)."""
    jobs: bool = False
    """A Job changed, or a Job's deadline or TTL is due."""
    gone: set[str] = field(default_factory=set)
    """uids of deleted owners (Jobs, plain DaemonSets) whose dependents the garbage collector removes."""
    daemonset_runs: int = 0
    """How many times a light tick ran a DaemonSet's controller (the demo's own tests read it)."""
    _owner: tuple[dict[str, Any] | None, bool] = (None, False)
    """The last owning DaemonSet looked at and whether it is plain (a probe's pods come one after another)."""

    def _plain_owner(self, ds: dict[str, Any]) -> bool:
        if self._owner[0] is not ds:
            self._owner = (ds, plain_daemonset(ds))
        return self._owner[1]

    def pending(self) -> bool:
        return bool(self.pods or self.daemonsets or self.jobs or self.gone)

    def clear(self) -> None:
        """A full tick is about to look at everything."""
        self.full = False
        self.pods.clear()
        self.daemonsets.clear()
        self.jobs = False
        self.gone.clear()

    def note(self, event: WatchEvent, store: Store) -> None:
        """Sort one store event (called under the store lock, in the writer's thread)."""
        if event.resource in _UNREAD or self.full:
            return
        deleted = event.type == "DELETED"
        if event.resource == "jobs":
            self.jobs = True
            if deleted:
                self.gone.add(str(event.obj["metadata"].get("uid", "")))
            return
        plain_before = event.old is None or deleted or plain_daemonset(event.old)
        if event.resource == "daemonsets" and plain_daemonset(event.obj) and plain_before:
            if deleted:
                self.gone.add(str(event.obj["metadata"].get("uid", "")))
            else:
                self.daemonsets.add(_key(event.obj))
            return
        if event.resource == "pods":
            tied = event.old is not None and not deleted and _same_ties(event.old, event.obj)
            now = plain_pod(event.obj, store, self._plain_owner)
            before = now if event.old is None or deleted or tied else plain_pod(event.old, store, self._plain_owner)
            if now is not None and before is not None:
                if not deleted:
                    self.pods.add(_key(event.obj))
                # Its DaemonSet's controller reads a pod's node, labels and readiness (its status counts ready
                # pods; a deleted one may be replaced): a status write that changes none of them leaves it be.
                counted = not tied or pod_ready(event.old) != pod_ready(event.obj)
                if now.owner is not None and counted:
                    self.daemonsets.add(now.owner)
                if now.orphaned:
                    self.gone.add(now.orphaned)
                return
        self.full = True

    async def run_controllers(self, writer: Writer, eligible: Eligible) -> tuple[bool, float | None]:
        """A light tick's Job, plain-DaemonSet and garbage collection controllers for what changed.

        Returns whether the Jobs were reconciled, and the seconds until a Job's deadline or TTL."""
        store = writer.store
        jobs_ran, due = self.jobs, None
        if self.jobs:
            self.jobs = False
            due = reconcile_jobs(writer)
        touched, self.daemonsets = sorted(self.daemonsets), set()
        nodes: list[dict[str, Any]] | None = None
        for namespace, name in touched:
            ds = store.lookup("daemonsets", name, namespace)
            if ds is not None:
                nodes = read(store, "nodes") if nodes is None else nodes
                uid = ds["metadata"].get("uid", "")
                owned = [obj for res, obj in store.dependents(uid) if res == "pods" and controller_uid(obj) == uid]
                self.daemonset_runs += 1
                pacer = Pacer()
                for _ in daemonset_sync(writer, ds, owned, eligible(ds, nodes)):
                    if pacer.due():
                        await pacer.pause()
                        now = store.lookup("daemonsets", name, namespace)
                        if now is None or now["metadata"].get("uid") != uid:
                            break  # deleted meanwhile: the garbage collector takes what this sync created
        while self.gone:  # a deleted DaemonSet's uid comes back here within this loop: its pods go too
            collect_dependents(writer, self.gone.pop())
        return jobs_ran, due
