"""What the operator is doing right now, as findings for the first steps (Connect, Nodes).

A newcomer connecting to a cluster in the middle of a driver upgrade, or with a driver pod that cannot
pull its image, saw nothing of it until Apply or Verify (issue 25). These findings say it at once, in
the words of those steps: the upgrade's :attr:`~wizard.engine.upgrade.InProgress.summary` and its
``upgrade-failed`` nodes as Apply shows them, and each failing driver pod as
:func:`wizard.cluster.upgrading.upgrades.driver_pod_problems` words it. (The policy's own state is a preflight
check: :func:`wizard.engine.policy_health.policy_health`.) They are warnings: the wizard is how they
get fixed, so none blocks Next.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.upgrading.upgrades import driver_pod_problems
from wizard.engine.facts import LABEL_UPGRADE_STATE, ClusterFacts, cluster_facts
from wizard.engine.node_grammar import NodeFactsError
from wizard.engine.results import Check, Status
from wizard.engine.upgrade import upgrade_in_progress

if TYPE_CHECKING:
    from wizard.cluster.core.preflight import Preflight
    from wizard.cluster.core.session import Session

#: Nodes an upgrade has not finished with: only these are listed when the caller has no node facts.
UNFINISHED = f"{LABEL_UPGRADE_STATE},{LABEL_UPGRADE_STATE}!=upgrade-done"
PAGE = 500


async def live_findings(session: Session, preflight: Preflight, facts: ClusterFacts | None = None) -> list[Check]:
    """The upgrade under way (done/total, failed nodes) and failing driver pods; [] without a live policy.

    Without ``facts`` (Connect, before discovery) only the nodes an upgrade has not finished are
    listed, and every labelled node only when there are some: a settled cluster costs one empty list.
    """
    policy = preflight.cluster_policy
    if policy is None:
        return []
    try:
        problems = await driver_pod_problems(session, preflight.operator_namespace)
        if facts is None:
            facts = await _upgrading_nodes(session)
    except (
        ClusterError,
        NodeFactsError,
    ) as exc:  # a finding that could not be made is said, never taken for "all is well"
        return [
            Check(
                "driver-pods", Status.SKIP, f"the driver pods' state could not be read: {getattr(exc, 'message', exc)}"
            )
        ]
    rolling_out = str(((policy.get("spec") or {}).get("driver") or {}).get("version") or "?")
    progress = upgrade_in_progress(facts, rolling_out, problems)
    found: list[Check] = []
    if progress is not None:
        found.append(Check("upgrade", Status.WARN, progress.summary, hint="Apply shows what a new plan would do to it"))
        found += [Check("upgrade-failed", Status.WARN, why, node=node) for node, why in sorted(progress.failed.items())]
    failed = progress.failed if progress is not None else {}
    found += [
        Check("driver-pod", Status.WARN, why, node=node, hint="Verify and `gpu-wizard doctor` diagnose it")
        for node, why in sorted(problems.items())
        if node not in failed
    ]
    return found


async def _upgrading_nodes(session: Session) -> ClusterFacts:
    """The facts of the nodes in an upgrade (none when every labelled node is done)."""
    unfinished = await _list_nodes(session, UNFINISHED)
    if not unfinished:
        return cluster_facts([])
    return cluster_facts(await _list_nodes(session, LABEL_UPGRADE_STATE))


async def _list_nodes(session: Session, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    pages = session.gateway.pages("nodes", label_selector=selector, limit=PAGE)
    async with contextlib.aclosing(pages):
        async for page in pages:
            items += page.get("items") or []
    return items
