"""Kubernetes' own controllers, simulated: DaemonSets, Deployments, Jobs' deadlines and garbage collection."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from wizard.demo.api.bootstrap import established_status
from wizard.demo.rules.operator_rules import LABEL_DEPLOY_DRIVER
from wizard.demo.sim.nodes import set_gpu_capacity
from wizard.demo.sim.operands import MANAGER_CTR
from wizard.demo.sim.placement import DS_TOLERATIONS, eligible_nodes, matches
from wizard.demo.sim.simutil import Writer, controller_uid, labels_of, now, read, stable_suffix, template_hash, thaw
from wizard.demo.sim.world import NodeView, container_status, is_running, pod_ready

BURST_REPLICAS = 250
"""Pods one DaemonSet's sync creates at most (Kubernetes' DaemonSet controller's ``BurstReplicas``): a
DaemonSet over 5,000 nodes fills up over several syncs, each after the last one's writes, as on a real
cluster; one sync creating them all held the API server's event loop for a fifth of a second."""


def _owner(kind: str, api_version: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod_from_template(
    template: dict[str, Any], namespace: str, name: str, labels: dict[str, str], owner: dict[str, Any]
) -> dict[str, Any]:
    meta = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": name[:-5],
            "namespace": namespace,
            "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner],
        },
        "spec": {"schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30, **spec},
    }


#: The nodes a DaemonSet fits, given the DaemonSet and every node (the simulation caches it per DaemonSet spec).
Eligible = Callable[[dict[str, Any], list[dict[str, Any]]], frozenset[str]]


def reconcile_daemonsets(
    writer: Writer, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], eligible: Eligible = eligible_nodes
) -> None:
    """Create, delete and replace DaemonSet pods; write every DaemonSet's status."""
    by_owner: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_owner.setdefault(controller_uid(pod), []).append(pod)
    for ds in read(writer.store, "daemonsets"):
        reconcile_daemonset(writer, ds, by_owner.get(ds["metadata"].get("uid", ""), []), eligible(ds, nodes))


def reconcile_daemonset(
    writer: Writer, ds: dict[str, Any], owned: list[dict[str, Any]], eligible: frozenset[str]
) -> None:
    """One DaemonSet: its pods (``owned``: those whose controller it is) on exactly the ``eligible`` nodes, and its status."""
    for _ in daemonset_sync(writer, ds, owned, eligible):
        pass


def daemonset_sync(
    writer: Writer, ds: dict[str, Any], owned: list[dict[str, Any]], eligible: frozenset[str]
) -> Iterator[None]:
    """:func:`reconcile_daemonset`, yielding after each pod it creates so that a caller on the server's loop can
    pause; the status is written only while the DaemonSet is still the object this sync read."""
    store = writer.store
    meta = ds["metadata"]
    namespace = meta.get("namespace", "default")
    template = ds["spec"]["template"]
    revision = template_hash(template)
    generation = str(meta.get("generation", 1))
    on_node: dict[str, dict[str, Any]] = {}
    for pod in owned:
        node = pod["spec"].get("nodeName", "")
        if node not in eligible or node in on_node:
            writer.delete("pods", pod["metadata"]["name"], namespace)
        else:
            on_node[node] = pod
    owner = _owner("DaemonSet", "apps/v1", meta["name"], meta.get("uid", ""))
    for node in sorted(eligible - set(on_node))[:BURST_REPLICAS]:
        seed = f"{meta.get('uid')}/{node}/{store.resource_version}"
        name = f"{meta['name']}-{stable_suffix(seed)}"
        pod = _pod_from_template(
            template,
            namespace,
            name,
            {"controller-revision-hash": revision, "pod-template-generation": generation},
            owner,
        )
        pod["spec"]["nodeName"] = node
        pod["spec"]["affinity"] = {  # the controller pins its pod to the node (replacing the template's)
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                }
            }
        }
        pod["spec"]["tolerations"] = list(pod["spec"].get("tolerations") or []) + DS_TOLERATIONS
        created = writer.create("pods", pod, adopt=True)  # fresh but for the template's parts, never mutated
        if created is not None:
            on_node[node] = created
        yield
    outdated = [p for p in on_node.values() if labels_of(p).get("controller-revision-hash") != revision]
    rolling = ds["spec"].get("updateStrategy", {}).get("type") != "OnDelete"
    if rolling and outdated and all(pod_ready(p) for p in on_node.values() if p not in outdated):
        victim = outdated[0]
        writer.delete("pods", victim["metadata"]["name"], namespace)
        on_node.pop(victim["spec"]["nodeName"], None)
    ready = sum(1 for p in on_node.values() if pod_ready(p))
    updated = sum(1 for p in on_node.values() if labels_of(p).get("controller-revision-hash") == revision)
    status = {
        "currentNumberScheduled": len(on_node),
        "desiredNumberScheduled": len(eligible),
        "numberMisscheduled": 0,
        "numberReady": ready,
        "numberAvailable": ready,
        "observedGeneration": meta.get("generation", 1),
        "updatedNumberScheduled": updated,
    }
    if len(eligible) - ready:
        status["numberUnavailable"] = len(eligible) - ready
    if ds.get("status") != status and store.lookup("daemonsets", meta["name"], namespace) is ds:
        # handed over: a deep copy of the spec per status write cost the demo ~5 CPU-s in a 5,000-node
        # verification (the host probe's template names each node in a term of its own, 20,000 containers)
        writer.update("daemonsets", {**ds, "status": status}, adopt=True)


def schedule(writer: Writer, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Bind pods without ``spec.nodeName`` to the first schedulable node their nodeSelector matches."""
    ready = [n for n in nodes if not (n.get("spec") or {}).get("unschedulable")]
    for pod in pods:
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        selector = spec.get("nodeSelector") or {}
        fits = [n["metadata"]["name"] for n in ready if matches(labels_of(n), selector)]
        if fits:
            writer.update("pods", {**pod, "spec": {**spec, "nodeName": fits[0]}}, adopt=True)
            continue
        message = (
            f"0/{len(nodes)} nodes are available: {len(nodes)} node(s) didn't match Pod's node affinity/selector. "
            f"preemption: 0/{len(nodes)} nodes are available: {len(nodes)} Preemption is not helpful for scheduling."
        )
        conditions = (pod.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "PodScheduled" and c.get("message") == message for c in conditions):
            continue
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": now(),
        }
        writer.update(
            "pods", {**pod, "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [condition]}}
        )


def replicaset_uid(deployment: dict[str, Any], revision: str) -> str:
    """The uid of the (unstored) ReplicaSet that owns a Deployment's pods."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{deployment['metadata'].get('uid')}/{revision}"))


def reconcile_deployments(writer: Writer, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> set[str]:
    """Keep each Deployment's replicas as pods (scheduled on the first fitting node); returns the owner uids."""
    owners: set[str] = set()
    by_owner: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_owner.setdefault(controller_uid(pod), []).append(pod)
    schedulable = [n for n in nodes if not n.get("spec", {}).get("unschedulable")]
    for dep in read(writer.store, "deployments"):
        meta = dep["metadata"]
        template = dep["spec"].get("template") or {}
        revision = template_hash(template)
        rs_uid = replicaset_uid(dep, revision)
        owners.add(rs_uid)
        mine = by_owner.get(rs_uid, [])
        want = int(dep["spec"].get("replicas", 1))
        selector = (template.get("spec") or {}).get("nodeSelector") or {}
        fits = [n["metadata"]["name"] for n in schedulable if matches(labels_of(n), selector)]
        rs_name = f"{meta['name']}-{revision}"
        for i in range(len(mine), want):
            if not fits:
                break
            seed = f"{rs_uid}/{i}/{writer.store.resource_version}"
            name = f"{rs_name}-{stable_suffix(seed)}"
            pod = _pod_from_template(
                template,
                meta.get("namespace", "default"),
                name,
                {"pod-template-hash": revision},
                _owner("ReplicaSet", "apps/v1", rs_name, rs_uid),
            )
            pod["spec"].setdefault("nodeName", fits[i % len(fits)])
            created = writer.create("pods", pod)
            if created is not None:
                mine.append(created)
        ready = sum(1 for p in mine if pod_ready(p))
        status = {
            "observedGeneration": meta.get("generation", 1),
            "replicas": len(mine),
            "updatedReplicas": len(mine),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True" if ready >= want else "False",
                    "reason": "MinimumReplicasAvailable" if ready >= want else "MinimumReplicasUnavailable",
                    "message": "Deployment has minimum availability."
                    if ready >= want
                    else "Deployment does not have minimum availability.",
                }
            ],
        }
        if ready < want:
            status["unavailableReplicas"] = want - ready
        if dep.get("status") != status:
            writer.update("deployments", {**dep, "status": status})
    return owners


def _since(stamp: str) -> float:
    """Seconds since an RFC 3339 timestamp (0 when there is none)."""
    try:
        return (dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(stamp)).total_seconds()
    except (TypeError, ValueError):
        return 0.0


def reconcile_jobs(writer: Writer) -> float | None:
    """Start, expire and (TTL) delete Jobs; returns seconds until the next deadline or TTL is due (None: none)."""
    due: list[float] = []
    for job in read(writer.store, "jobs"):
        spec, status = job.get("spec") or {}, dict(job.get("status") or {})
        finished = next(
            (
                c
                for c in status.get("conditions") or []
                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            ),
            None,
        )
        if finished is not None:
            ttl = spec.get("ttlSecondsAfterFinished")
            if ttl is not None:
                left = float(ttl) - _since(str(finished.get("lastTransitionTime") or ""))
                if left <= 0:
                    writer.delete("jobs", job["metadata"]["name"], job["metadata"].get("namespace"))
                else:
                    due.append(left)
            continue
        if not status.get("startTime"):
            status.update(startTime=now(), active=0)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None:
            left = float(deadline) - _since(str(status["startTime"]))
            if left <= 0:
                stamp = now()
                status["conditions"] = [
                    {
                        "type": kind,
                        "status": "True",
                        "reason": "DeadlineExceeded",
                        "lastProbeTime": stamp,
                        "lastTransitionTime": stamp,
                        "message": "Job was active longer than specified deadline",
                    }
                    for kind in ("FailureTarget", "Failed")
                ]
                due.append(float(spec.get("ttlSecondsAfterFinished") or 0))
            else:
                due.append(left)
        if status != (job.get("status") or {}):
            writer.update("jobs", {**job, "status": status})
    return min(due) if due else None


def collect_garbage(writer: Writer, pods: list[dict[str, Any]], live_owner_uids: set[str]) -> None:
    """Delete DaemonSets whose owner (ClusterPolicy, NVIDIADriver, Job) is gone and pods whose controller is gone."""
    store = writer.store
    crs = {cr["metadata"].get("uid") for res in ("clusterpolicies", "nvidiadrivers", "jobs") for cr in read(store, res)}
    for ds in read(store, "daemonsets"):
        refs = ds["metadata"].get("ownerReferences") or []
        if refs and not any(r.get("uid") in crs for r in refs):
            writer.delete("daemonsets", ds["metadata"]["name"], ds["metadata"].get("namespace"))
    live = live_owner_uids | {ds["metadata"].get("uid") for ds in read(store, "daemonsets")}
    for pod in pods:
        owner = controller_uid(pod)
        if owner and owner not in live:
            writer.delete("pods", pod["metadata"]["name"], pod["metadata"].get("namespace"))


def node_agents(writer: Writer, nodes: list[dict[str, Any]], views: dict[str, NodeView]) -> None:
    """What node agents write to their Node: driver-manager's label, the device plugin's GPUs."""
    for node in nodes:
        view = views.get(node["metadata"]["name"])
        if view is None:
            continue
        manager = container_status(view.driver_pod, MANAGER_CTR) if view.driver_pod else {}
        label = (
            view.host_driver_ok and is_running(manager) and labels_of(node).get(LABEL_DEPLOY_DRIVER) != "pre-installed"
        )
        capacity = (node.get("status") or {}).get("capacity") or {}
        advertised = view.plugin_pod is not None and pod_ready(view.plugin_pod)
        gpus = advertised and capacity.get("nvidia.com/gpu") != str(view.spec.advertised_gpus)
        if not (label or gpus):
            continue
        node = thaw(node)
        if label:
            labels_of(node)[LABEL_DEPLOY_DRIVER] = "pre-installed"
        if gpus:
            set_gpu_capacity(node, view.spec.advertised_gpus)
        writer.update("nodes", node)


def establish_crds(writer: Writer) -> None:
    """The API server's apiextensions controllers: a new CRD's names are accepted and it is Established (a
    client such as helm waits for that condition before it creates the CRD's objects)."""
    for crd in read(writer.store, "customresourcedefinitions"):
        conditions = (crd.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            writer.update("customresourcedefinitions", {**thaw(crd), "status": established_status(crd)})
