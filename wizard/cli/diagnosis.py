"""The diagnosis block of ``gpu-wizard verify``: after a failed check, why the failing nodes fail.

:func:`gather` runs :meth:`Cluster.diagnose` with a time limit (a diagnosis that cannot run is
SKIPPED with its reason, never silently missing); :func:`write` prints each diagnosis under a
heading, with the cause, the fix and the matching log lines indented beneath it; :func:`attach`
adds, in the JSON report, the diagnosis of a node beside each of its failed checks.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.engine.plan import Plan
    from wizard.engine.results import Check

SHOWN_LINES = 6
"""Evidence lines printed per diagnosis in text output (JSON carries all that were kept)."""
SHOWN_WIDTH = 240
"""Characters of an evidence line printed in text output (JSON carries them whole, up to the matcher's limit)."""


async def gather(cluster: Cluster, plan: Plan, *, nodes: list[str] | None = None, timeout: float = 60.0) -> list[Check]:
    """The diagnosis checks for the failing nodes, or one SKIPPED check saying why none could be made."""
    from wizard.cluster.facade import ClusterError
    from wizard.engine.results import Check, Status

    found: list[Check] = []
    try:
        async with asyncio.timeout(timeout):
            async for check in cluster.diagnose(plan, nodes=nodes):
                found.append(check)
    except TimeoutError:
        found.append(
            Check("diagnosis", Status.SKIP, f"diagnosis stopped after {timeout:.0f}s", data={"reason": "timeout"})
        )
    except ClusterError as exc:
        found.append(
            Check(
                "diagnosis",
                Status.SKIP,
                f"diagnosis could not run: {exc.message}",
                hint=exc.hint,
                data={"reason": exc.message},
            )
        )
    return found


def write(checks: list[Check], out: TextIO) -> None:
    """The diagnosis block: one entry per diagnosis, its cause, fix and matching (or last) log lines."""
    if not checks:
        return
    out.write(
        "\ndiagnosis (driver, toolkit and validator pod logs, events and the upgrade-state label, matched against known failures):\n"
    )
    for check in checks:
        out.write(check.line() + "\n")
        findings = check.data.get("findings") or []
        if findings:
            out.write(f"    cause: {findings[0]['cause']}\n")
        if check.hint:
            out.write(f"    fix: {check.hint}\n" if findings else f"    hint: {check.hint}\n")
        if check.data.get("validator"):
            out.write(f"    validator: {check.data['validator']}\n")
        lines = [str(line) for line in check.data.get("lines") or []]
        for line in lines[:SHOWN_LINES]:
            out.write(f"    | {line if len(line) <= SHOWN_WIDTH else line[: SHOWN_WIDTH - 1] + '…'}\n")
        if len(lines) > SHOWN_LINES:
            out.write(f"    | … {len(lines) - SHOWN_LINES} more lines (-o json has them)\n")
    out.flush()


def attach(checks: list[dict[str, Any]], diagnosis: list[Check]) -> list[dict[str, Any]]:
    """The JSON checks, each failed node check with its node's diagnosis beside it (``diagnosis``)."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for check in diagnosis:
        if check.node:
            by_node.setdefault(check.node, []).append(
                {
                    "message": check.message,
                    "findings": check.data.get("findings") or [],
                    "lines": check.data.get("lines") or [],
                }
            )
    out: list[dict[str, Any]] = []
    for item in checks:
        if item.get("status") == "fail" and item.get("node") in by_node and item.get("check") != "diagnosis":
            item = {**item, "diagnosis": by_node[item["node"]]}
        out.append(item)
    return out
