"""Nodes kept out of the driver rollout (``driver.excludeNodes``): the node label the apply writes and its words.

The GPU Operator labels every GPU node ``nvidia.com/gpu.deploy.driver=true`` and its driver DaemonSets select
that value; a non-empty value an admin set is kept (``addGPUStateLabels``), so ``false`` keeps the driver pod off
the node while the other operands stay (docs/gpu-operator-facts.md §2 and §5). The apply writes the label with
the plan, the backup keeps each node's value before, and a rollback puts it back. A GeForce/TITAN node (whose
licence excludes the data-center driver) is the case it is for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Protocol

from wizard.engine.facts import LABEL_DEPLOY_DRIVER  # the operator's per-node switch of the driver operand

EXCLUDED = "false"
"""The value that keeps the driver operand off a node."""

#: Consumer products: GeForce, TITAN and GeForce RTX model numbers (RTX 3080, RTX-4090, ...).
CONSUMER_GPU_RE = re.compile(r"geforce|titan|\brtx[-_ ]?\d{2}[5-9]0(?!\d)", re.IGNORECASE)


class _GpuNode(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def gpu_product(self) -> str: ...


def consumer_nodes(nodes: Iterable[_GpuNode]) -> dict[str, str]:
    """GPU node -> its GeForce/TITAN product (the nodes the licence finding offers to keep out of the rollout)."""
    return {n.name: n.gpu_product for n in nodes if CONSUMER_GPU_RE.search(n.gpu_product)}


def label_changes(excluded: Iterable[str], current: Mapping[str, str | None]) -> dict[str, str | None]:
    """Node -> its label value before (None: absent) for each excluded node the apply must still label.

    A node already labelled ``false`` needs no write; a node not in ``current`` (gone from the cluster) gets none.
    """
    return {node: current[node] for node in sorted(set(excluded)) if node in current and current[node] != EXCLUDED}


def describe(changes: Mapping[str, str | None]) -> list[str]:
    """One line per node the apply relabels: ``Node/rtx-1: nvidia.com/gpu.deploy.driver true -> false``."""
    return [
        f"Node/{node}: label {LABEL_DEPLOY_DRIVER} {before if before is not None else '(none)'} -> {EXCLUDED} "
        "(kept out of the driver rollout)"
        for node, before in sorted(changes.items())
    ]


def label_argv(node: str) -> list[str]:
    """The ``kubectl label`` that keeps ``node`` out of the driver rollout (printed where the wizard does not write)."""
    return ["kubectl", "label", "node", node, f"{LABEL_DEPLOY_DRIVER}={EXCLUDED}", "--overwrite"]


def restore_argv(node: str, before: str | None) -> list[str]:
    """The ``kubectl label`` that puts ``node``'s label back to ``before`` (removes it when it had none): the undo of
    :func:`label_argv` where the undo is not the wizard's own rollback (a Helm-owned change's ``helm rollback``
    restores the values, not the node labels)."""
    if before is None:
        return ["kubectl", "label", "node", node, f"{LABEL_DEPLOY_DRIVER}-"]
    return ["kubectl", "label", "node", node, f"{LABEL_DEPLOY_DRIVER}={before}", "--overwrite"]


def label_diff(changes: Mapping[str, str | None]) -> str:
    """The node label writes as a unified-diff fragment, so Preview's and ``apply``'s diff show them."""
    out = []
    for node, before in sorted(changes.items()):
        out += [f"--- live/Node/{node}\n", f"+++ planned/Node/{node}\n", "@@ metadata.labels @@\n"]
        if before is not None:
            out.append(f"-  {LABEL_DEPLOY_DRIVER}: {json.dumps(before)}\n")
        out.append(f"+  {LABEL_DEPLOY_DRIVER}: {json.dumps(EXCLUDED)}\n")
    return "".join(out)
