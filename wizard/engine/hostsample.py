"""Which GPU nodes the host checks run on before apply without being asked: bounded, yet every group seen.

A host check is a privileged probe pod per node. Up to :data:`AUTO_HOSTS` GPU nodes, every one is checked;
above that, :data:`PER_GROUP` nodes of each (kernel, OS tag) group (the nodes that share a driver image share
most host traits: the same OS build, the same kernel), and the rest only when the user asks. The TUI's Nodes
and Preview steps and ``gpu-wizard apply`` take the same sample.
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.engine.facts import ClusterFacts

#: Up to this many GPU nodes, every host is checked before apply.
AUTO_HOSTS = 64
#: Above :data:`AUTO_HOSTS`: hosts checked per (kernel, OS tag) group.
PER_GROUP = 2


@dataclass(frozen=True)
class HostSample:
    """The GPU nodes to check now, and how many are left for a check on request."""

    nodes: tuple[str, ...]
    total: int
    """Every GPU node."""

    @property
    def rest(self) -> int:
        """GPU nodes not in the sample."""
        return self.total - len(self.nodes)

    def describe(self) -> str:
        """``all 3 GPU nodes`` or ``8 of 5000 GPU nodes (2 per kernel and OS)``."""
        if not self.rest:
            return f"all {self.total} GPU node{'s' if self.total != 1 else ''}"
        return f"{len(self.nodes)} of {self.total} GPU nodes ({PER_GROUP} per kernel and OS)"


def host_sample(facts: ClusterFacts, release: str, *, everything: bool = False) -> HostSample:
    """Every GPU node up to :data:`AUTO_HOSTS` (or with ``everything``), else :data:`PER_GROUP` per group."""
    gpu = sorted(n.name for n in facts.gpu_nodes)
    if everything or len(gpu) <= AUTO_HOSTS:
        return HostSample(tuple(gpu), len(gpu))
    picked: list[str] = []
    for group in facts.groups(release):
        picked += sorted(n.name for n in group.nodes)[:PER_GROUP]
    return HostSample(tuple(sorted(picked[:AUTO_HOSTS])), len(gpu))
