"""Nodes kept out of the driver rollout (``driver.excludeNodes``) on the cluster: which still need the label, and
writing it.

Every way a plan reaches the cluster writes the same label (:mod:`wizard.engine.exclusion`): a direct apply after
its objects, a Helm-owned change after its ``helm upgrade``, and an operator install before ``helm install``, so
the operator's first reconcile never schedules the driver on an excluded node. The backup of an apply or a
Helm-owned change keeps each node's value before, and ``gpu-wizard rollback`` puts it back.
"""

from __future__ import annotations

from collections.abc import Iterable

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.exclusion import EXCLUDED, label_changes
from wizard.engine.facts import LABEL_DEPLOY_DRIVER
from wizard.engine.plan import Plan


async def excluded_node_labels(gateway: Gateway, plan: Plan, errors: list[str]) -> dict[str, str | None]:
    """The excluded nodes still to label, each with its label value now (None: absent); a node not in the cluster
    is an error (appended to ``errors``). Nothing for a plan without the driver (pre-installed mode)."""
    if not plan.driver_enabled:
        return {}
    current: dict[str, str | None] = {}
    for name in plan.driver.excludeNodes:
        node = await gateway.read_node(name)
        if node is None:
            errors.append(f"driver.excludeNodes: node {name} is not in the cluster")
            continue
        current[name] = ((node.get("metadata") or {}).get("labels") or {}).get(LABEL_DEPLOY_DRIVER)
    return label_changes(plan.driver.excludeNodes, current)


async def label_excluded(gateway: Gateway, nodes: Iterable[str]) -> list[str]:
    """Label each node ``nvidia.com/gpu.deploy.driver=false`` (in name order); the names labelled. ClusterError
    ("labelling node X: why") from the first write that fails (the ones before it stay labelled: the caller says so
    or restores them)."""
    done = []
    for node in sorted(nodes):
        try:
            await gateway.patch_node_labels(node, {LABEL_DEPLOY_DRIVER: EXCLUDED})
        except ClusterError as exc:
            raise ClusterError(f"labelling node {node}: {exc.message}", exc.hint) from None
        done.append(node)
    return done


def labelled_words(nodes: Iterable[str]) -> str:
    """``labelled nvidia.com/gpu.deploy.driver=false on a, b`` ("" for none): how every result line says it."""
    names = sorted(nodes)
    return f"labelled {LABEL_DEPLOY_DRIVER}={EXCLUDED} on {', '.join(names)}" if names else ""
