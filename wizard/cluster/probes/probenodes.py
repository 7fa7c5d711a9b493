"""Which nodes the host probe DaemonSet selects, written so that the real DaemonSet controller stays linear.

kube-controller-manager's DaemonSet controller checks the pod template against every node on each sync
and parses every ``nodeSelectorTerm`` of the template for each node. The API server allows one value per
``matchFields`` requirement, so a template naming N nodes holds N terms: N × nodes parses per sync. At
5,000 GPU nodes that was about 30 s of a core per sync on the real server, and its pods came about 250
per sync: 10 minutes for the probe's 5,000 pods, far past verification's deadline (measured,
docs/real-cluster.md). A label requirement costs the same whatever the count: 5,000 pods in 100 s.

So when the nodes to probe are exactly the nodes carrying one GPU label value (less a few, excluded by
their ``kubernetes.io/hostname``), among every node the cluster listed, the template says that in one
term; a few nodes, or a set no such label describes, are named one term each. Only the labels that say
a node has an NVIDIA GPU are used: the operator's own ``nvidia.com/gpu.deploy.*`` and upgrade-state
labels change while it works, and a node whose label changed mid-run would lose its probe pod. A node
that joins with the label during the run gets a pod too; its answer is not waited for, and the pod goes
with the DaemonSet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wizard.engine.facts import LABEL_GPU_PRESENT, PCI_NVIDIA_LABELS

HOSTNAME = "kubernetes.io/hostname"
NAMED_MAX = 64
"""Up to this many nodes, each is named: 64 terms × the cluster's nodes per sync is cheap."""
EXCLUDE_MAX = 64
"""At most this many nodes carrying the label but not probed are left out by hostname."""
GPU_LABEL_KEYS = (LABEL_GPU_PRESENT, *PCI_NVIDIA_LABELS)


def node_terms(nodes: Sequence[str], labels: Mapping[str, Mapping[str, str]] | None) -> list[dict[str, Any]]:
    """The ``nodeSelectorTerms`` that select exactly ``nodes`` among ``labels`` (every node's labels, by name;
    None when not known): one label term where one describes them, else one ``matchFields`` term per node."""
    wanted = set(nodes)
    if labels is not None and len(wanted) > NAMED_MAX and wanted <= labels.keys():
        term = _label_term(wanted, labels)
        if term is not None:
            return [term]
    return [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]} for node in sorted(wanted)]


def _label_term(wanted: set[str], labels: Mapping[str, Mapping[str, str]]) -> dict[str, Any] | None:
    best: tuple[str, str, list[str]] | None = None
    for key in GPU_LABEL_KEYS:
        values = {labels[name].get(key) for name in wanted}
        if len(values) != 1 or None in values:
            continue  # not one value on every node to probe
        (value,) = values
        extras = sorted(name for name, own in labels.items() if own.get(key) == value and name not in wanted)
        if best is None or len(extras) < len(best[2]):
            best = (key, str(value), extras)
    if best is None or len(best[2]) > EXCLUDE_MAX:
        return None
    key, value, extras = best
    excluded = {labels[name].get(HOSTNAME, "") for name in extras}
    if "" in excluded or any(labels[name].get(HOSTNAME) in excluded for name in wanted):
        return None  # a node to leave out has no hostname label, or shares one with a node to probe
    requirements: list[dict[str, Any]] = [{"key": key, "operator": "In", "values": [value]}]
    if excluded:
        requirements.append({"key": HOSTNAME, "operator": "NotIn", "values": sorted(excluded)})
    return {"matchExpressions": requirements}
