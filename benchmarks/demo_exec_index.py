"""EXPERIMENT: the demo server with the exec fix proposed for ``wizard/demo/simulation.py`` (not applied there).

``Simulation._context`` builds the node view of an exec'd pod from *every* pod in the store, so each
exec costs O(pods) on the server's single event loop: ~3.6 ms of CPU per exec with 4,000 operand pods,
more than the 50 ms / 16 execs of the benchmark's ideal allows. Here the pods are indexed by node once
per store version (nothing is written while verification runs), which is the proposed fix. Run by
``benchmarks/verification.py --with-proposed-fix`` in the server process only; the engine is unchanged.
"""

from __future__ import annotations

import sys
from typing import Any

from wizard.demo import simulation
from wizard.demo.serve import main
from wizard.demo.simutil import read
from wizard.demo.world import NodeView, build_views

_index: dict[str, Any] = {"rv": None, "by_node": {}}


def _context(self: simulation.Simulation, namespace: str, pod_name: str) -> tuple[dict[str, Any], NodeView] | None:
    pod = self.store.get("pods", pod_name, namespace)
    if pod is None:
        return None
    node = pod.get("spec", {}).get("nodeName", "")
    node_obj = self.store.get("nodes", node) if node else None
    if node_obj is None:
        return None
    if _index["rv"] != self.store.resource_version:
        by_node: dict[str, list[dict[str, Any]]] = {}
        for other in self.store.iter_objects("pods"):
            by_node.setdefault(other.get("spec", {}).get("nodeName", ""), []).append(other)
        _index.update(rv=self.store.resource_version, by_node=by_node)
    views = build_views([node_obj], _index["by_node"].get(node, []), read(self.store, "daemonsets"), self.specs)
    return pod, views[node]


if __name__ == "__main__":
    simulation.Simulation._context = _context  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
