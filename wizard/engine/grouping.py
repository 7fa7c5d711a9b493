"""Findings grouped by what they say: one line for a finding on 4,000 nodes, with the nodes named.

The node doctor (``gpu-wizard doctor``, the Nodes step's host check) produces one ``Check`` per node;
:func:`group_findings` folds the checks that share a finding, cause and fix into a :class:`FindingGroup`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from wizard.engine.results import Check, Status
from wizard.engine.textsafe import printable


@dataclass(frozen=True)
class FindingGroup:
    """One finding and every node that has it (a finding on 4,000 nodes is one group)."""

    check: str
    status: Status
    message: str
    hint: str
    nodes: tuple[str, ...]
    detail: str = ""

    def summary(self, most: int = 3) -> str:
        """``nouveau-loaded on 2 nodes (gpu-01, gpu-02): cause`` (control characters escaped)."""
        count = len(self.nodes)
        shown = ", ".join(self.nodes[:most]) + (f" and {count - most} more" if count > most else "")
        where = f" on {count} node{'s' if count != 1 else ''} ({shown})" if count else ""
        skipped = "SKIPPED " if self.status is Status.SKIP else ""
        return printable(f"{skipped}{self.check}{where}: {self.message}")

    def line(self, most: int = 3) -> str:
        """``✗ nouveau-loaded on 2 nodes (gpu-01, gpu-02): cause``."""
        return f"{self.status.symbol} {self.summary(most)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status.value,
            "message": self.message,
            "fix": self.hint,
            "nodes": list(self.nodes),
            "count": len(self.nodes),
        }


_ORDER = {Status.FAIL: 0, Status.WARN: 1, Status.SKIP: 2, Status.PASS: 3, Status.RUNNING: 4}


def group_findings(checks: Iterable[Check]) -> list[FindingGroup]:
    """Checks with the same finding, cause and fix folded into one group naming its nodes; failures first."""
    groups: dict[tuple[str, Status, str, str], list[str]] = {}
    details: dict[tuple[str, Status, str, str], str] = {}
    for check in checks:
        key = (check.check, check.status, check.message, check.hint)
        groups.setdefault(key, [])
        if check.node:
            groups[key].append(check.node)
        details.setdefault(key, check.detail)
    out = [
        FindingGroup(name, status, message, hint, tuple(sorted(nodes)), details[(name, status, message, hint)])
        for (name, status, message, hint), nodes in groups.items()
    ]
    return sorted(out, key=lambda g: (_ORDER[g.status], -len(g.nodes), g.check, g.message))
