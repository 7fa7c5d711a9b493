"""The pods each simulated node's view reads, by node, kept current from the store's changes (exec is hot)."""

from __future__ import annotations

from typing import Any

from wizard.demo.sim.world import operand_role


class OperandIndex:
    """The stored pods a node's view reads, by ``spec.nodeName`` and (namespace, name)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self._sorted: dict[str, list[dict[str, Any]]] = {}
        """The same per node in key order, until one of them changes."""

    def add(self, pod: dict[str, Any]) -> None:
        """Index a stored pod (its newest version replaces an older one); one no view reads is left out."""
        if not operand_role(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName", "")
        self._by_node.setdefault(node, {})[_key(pod)] = pod
        self._sorted.pop(node, None)

    def remove(self, pod: dict[str, Any]) -> None:
        """Forget a pod's version that was replaced or deleted."""
        if not operand_role(pod):
            return
        node = (pod.get("spec") or {}).get("nodeName", "")
        self._by_node.get(node, {}).pop(_key(pod), None)
        self._sorted.pop(node, None)

    def on(self, node: str) -> list[dict[str, Any]]:
        """The pods bound to ``node`` that its view reads (stored objects, by namespace and name)."""
        found = self._sorted.get(node)
        if found is None:
            pods = self._by_node.get(node, {})
            found = self._sorted[node] = [pods[key] for key in sorted(pods)]
        return found


def _key(pod: dict[str, Any]) -> tuple[str, str]:
    return pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
