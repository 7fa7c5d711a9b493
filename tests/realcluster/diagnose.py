"""What the lane's cluster looked like when a test failed, in a few lines for the failure report.

CI keeps only the run's printed output (the lane's process logs stay on the CI machine), so a flake that
does not reproduce here is diagnosed from this: the ClusterPolicy's and each NVIDIADriver's state, every
operand DaemonSet's counts, each pod that is not ready and why, the nodes' driver upgrade states, and the
operator's last errors. Read-only, and never raises: a failed look is one line saying so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.realcluster.cluster import NAMESPACE, RealCluster
from wizard.engine.facts import LABEL_UPGRADE_STATE

OPERATOR_LOG_LINES = 12


def lane_state(cluster: RealCluster) -> str:
    parts = [_look(what, cluster) for what in (_policies, _drivers, _daemonsets, _pods, _nodes, _operator_errors)]
    return "\n".join(line for part in parts for line in part)


def _look(what: Callable[[RealCluster], list[str]], cluster: RealCluster) -> list[str]:
    try:
        return what(cluster)
    except Exception as error:  # a diagnosis must not replace the failure it explains
        return [f"{what.__name__.strip('_')}: could not read ({type(error).__name__}: {error})"]


def _items(cluster: RealCluster, path: str) -> list[dict[str, Any]]:
    return list(cluster.get(path)["items"])


def _conditions(obj: dict[str, Any]) -> str:
    return "; ".join(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')} {str(c.get('message', ''))[:120]}".strip()
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _policies(cluster: RealCluster) -> list[str]:
    return [
        f"ClusterPolicy {p['metadata']['name']}: {(p.get('status') or {}).get('state', '')!r} {_conditions(p)}"
        for p in _items(cluster, "/apis/nvidia.com/v1/clusterpolicies")
    ] or ["ClusterPolicy: none"]


def _drivers(cluster: RealCluster) -> list[str]:
    try:
        found = _items(cluster, "/apis/nvidia.com/v1alpha1/nvidiadrivers")
    except Exception:  # the CRD is absent on a bare control plane
        return []
    return [f"NVIDIADriver {d['metadata']['name']}: {(d.get('status') or {}).get('state', '')!r}" for d in found]


def _daemonsets(cluster: RealCluster) -> list[str]:
    lines = []
    for ds in _items(cluster, f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets"):
        s = ds.get("status") or {}
        counts = "/".join(
            str(s.get(k, 0))
            for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled")
        )
        gone = " deleting" if ds["metadata"].get("deletionTimestamp") else ""
        lines.append(f"DaemonSet {ds['metadata']['name']}: desired/current/ready/updated {counts}{gone}")
    return lines or ["DaemonSets: none"]


def _pods(cluster: RealCluster) -> list[str]:
    lines = []
    for pod in _items(cluster, f"/api/v1/namespaces/{NAMESPACE}/pods"):
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        if ready and not pod["metadata"].get("deletionTimestamp"):
            continue
        waiting = {
            (c.get("state") or {}).get("waiting", {}).get("reason", "")
            for c in [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]
        } - {""}
        owner = ",".join(o.get("name", "") for o in pod["metadata"].get("ownerReferences") or []) or "no owner"
        lines.append(
            f"pod {pod['metadata']['name']} on {pod['spec'].get('nodeName', '-')}: {status.get('phase')} "
            f"not ready {sorted(waiting)} owner {owner}"
            + (" deleting" if pod["metadata"].get("deletionTimestamp") else "")
        )
    return lines


def _nodes(cluster: RealCluster) -> list[str]:
    return [
        f"node {n['metadata']['name']}: upgrade state {n['metadata'].get('labels', {}).get(LABEL_UPGRADE_STATE, '-')!r}"
        for n in _items(cluster, "/api/v1/nodes")
    ]


def _operator_errors(cluster: RealCluster) -> list[str]:
    process = cluster.processes.get("gpu-operator")
    if process is None:
        return ["operator: not running"]
    lines = process.log.read_text(errors="replace").splitlines()
    wanted = [line for line in lines if _is_error(line)][-OPERATOR_LOG_LINES:]
    return ["operator's last errors:", *(f"  {line[:300]}" for line in wanted)] if wanted else ["operator: no errors"]


def _is_error(line: str) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return "ERROR" in line or "not ready" in line.lower()
    return isinstance(entry, dict) and (
        entry.get("level") == "error" or "not ready" in str(entry.get("msg", "")).lower()
    )
