"""The host findings known before apply, per node: what the rollout blames when such a node's pods fail.

The host gate (``gpu-wizard apply``) and the TUI's Nodes and Paths steps find nouveau, Secure Boot under an
unsigned driver, a host driver, a noexec driver folder… before anything is written. A person may go on despite
them (``--allow-host-findings``, "continue anyway"); the rollout follower then takes them as an argument (data
flows one way: the findings are facts known before the plan is applied), so a driver or validator pod failing on
such a node ends the rollout at once with the known cause, instead of after the crash window with the pod's last
log line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from wizard.engine.hostdoctor import blocks_apply
from wizard.engine.results import Check
from wizard.engine.textsafe import printable

PriorFindings = Mapping[str, Sequence[Check]]
"""Node -> its blocking host findings from before apply (the first is the one named)."""


def by_node(checks: Iterable[Check]) -> dict[str, tuple[Check, ...]]:
    """The blocking host findings of ``checks`` (the doctor's and Paths' per-node checks), grouped by node."""
    found: dict[str, list[Check]] = {}
    for check in checks:
        if check.node and blocks_apply(check.check, check.status):
            found.setdefault(check.node, []).append(check)
    return {node: tuple(found[node]) for node in sorted(found)}


def named(node: str, findings: Sequence[Check]) -> str:
    """The node and its findings' names: ``gpu-l40s-1: nouveau-loaded``."""
    return printable(f"{node}: {', '.join(dict.fromkeys(f.check for f in findings))}")


def cause(node: str, findings: Sequence[Check]) -> str:
    """One line: the node, its first finding before apply and that finding's fix."""
    first = findings[0]
    message = str(first.message).replace(f"{node}: ", "").strip()
    more = f" (and {len(findings) - 1} more finding(s))" if len(findings) > 1 else ""
    fix = f": {first.hint}" if first.hint else ""
    return printable(f"{node}: {message} (found before apply as {first.check}, overridden){more}{fix}")
