"""``gpu-wizard drift --answers FILE``: how the live cluster differs from its plan, one line per difference.

For a cron job or a CI schedule: the live ClusterPolicy's fields the wizard owns and the NVIDIADrivers against
what the plan renders, the Helm release that manages the ClusterPolicy (its deployed revision as Helm recorded it:
chart version and values) against the values the plan computes, and every GPU node against the plan's image for it (a driver pod on another image or
kernel, a node on another OS than its image's, a node whose image the registry lacks). The rules are
:mod:`wizard.engine.drift`'s; the cluster is read through the facade. Exit 0: the cluster matches the plan;
1: drift; 2: bad input or an unusable cluster; 130: interrupted. ``-o json``, ``--report-junit``,
``--report-ctrf``, and several clusters at once (``--context A --context B``, ``--all-contexts``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from wizard.cli import fleet, reports
from wizard.cli.common import EXIT_FAILED, EXIT_OK
from wizard.cli.images import registry_client, registry_flags
from wizard.cli.session import cluster_options, command, load_plan, open_cluster, plan_for_cluster

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.engine.render import Rendered
    from wizard.engine.results import Check


def register(sub: Any) -> None:
    """Add ``drift`` to ``gpu-wizard``'s subparsers."""
    drift = sub.add_parser(
        "drift",
        help="compare the live ClusterPolicy, NVIDIADrivers, Helm release and GPU nodes with the plan: one line per "
        "difference",
        description="Compares the live ClusterPolicy (the fields the wizard owns) and NVIDIADrivers with what the "
        "answers file renders, the Helm release that manages the ClusterPolicy (its deployed chart version and "
        "values, read from Helm's release Secret) with the values the plan computes, and every GPU node with the plan's driver image for it: a driver pod running another "
        "image or built for another kernel, a node on another OS than its image's, a node whose image is not in the "
        "registry. Meant for a cron job or a CI schedule. Exit 0: the cluster matches the plan; 1: drift (one line per "
        "difference); 2: bad input or an unusable cluster; 130: interrupted.",
    )
    cluster_options(drift, fleet=True)
    drift.add_argument("--answers", required=True, metavar="FILE", help="the plan the cluster should run")
    drift.add_argument("-o", "--output", choices=("text", "json"), default="text")
    drift.add_argument(
        "--no-registry",
        action="store_true",
        help="do not ask the registry whether each node's image exists (a kernel without an image is then found "
        "only once its driver pod fails to pull)",
    )
    registry_flags(drift)
    reports.report_flags(drift)
    drift.set_defaults(handler=command(cmd_drift))


async def cmd_drift(args: argparse.Namespace) -> int:
    """``gpu-wizard drift``."""
    from wizard.engine.drift import node_drift, object_drift
    from wizard.engine.render import apply_patch, render
    from wizard.engine.results import Check, Status
    from wizard.engine.textsafe import printable

    plan = load_plan(args.answers)
    started = time.time()
    async with open_cluster(args) as cluster:
        plan = await plan_for_cluster(cluster, plan, args.answers)
        facts = await cluster.discover()
        rendered = render(plan, facts)
        policies, drivers = await cluster.live_driver_objects()
        namespace = (await cluster.preflight(plan)).operator_namespace or plan.operator.namespace
        running = await cluster.driver_pods(namespace)
        missing: dict[str, str] = {}
        unchecked: list[Check] = []
        if not args.no_registry and any(item.image for item in rendered.node_images):
            async with registry_client(args, cluster, plan) as registry:
                statuses = await cluster.check_images(rendered, registry)
            for status in statuses:
                if status.ok:
                    continue
                if status.target.error:
                    message = f"{status.image}: not checked ({status.target.error})"
                    unchecked += [Check("no-image", Status.SKIP, message, node=node) for node in status.nodes]
                else:
                    source = "; its mirror source has it (gpu-wizard mirror --run)" if status.mirrorable else ""
                    missing[status.image] = f"is not in the registry{source}"
        helm = await _helm_checks(cluster, rendered, policies)
        context = cluster.info.context
    desired = [apply_patch(plan, facts), *rendered.nvidia_drivers]
    checks = [*object_drift(desired, policies, drivers), *node_drift(rendered.node_images, facts, running, missing)]
    checks += [c for c in helm if c.status is not Status.SKIP]
    unchecked += [c for c in helm if c.status is Status.SKIP]
    checks += unchecked
    differences = [c for c in checks if not c.ok]
    code = EXIT_FAILED if differences else EXIT_OK
    fleet.note(
        gpu_nodes=len(facts.gpu_nodes),
        driver=fleet.driver_words(plan.mode.value, plan.driver.version),
        verdict=f"drift: {len(differences)} difference(s)" if differences else "no drift",
    )
    if reports.wanted(args):
        reports.record(
            args, reports.Suite("drift", context, reports.cases_from_checks(checks), started, warn_fails=True)
        )
    if args.output == "json":
        doc = {
            "context": context,
            "answers": args.answers,
            "drift": [_difference(c) for c in differences],
            "skipped": [_difference(c) for c in checks if c.status is Status.SKIP],
            "compared": len(checks),
            "exitCode": code,
        }
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
        return code
    for check in [*differences, *unchecked]:  # one line each (the hints are in -o json and the reports)
        sys.stdout.write(printable(check.line()) + "\n")
    if differences:
        sys.stdout.write(f"drift: {len(differences)} difference(s) from {args.answers}\n")
    else:
        sys.stdout.write(f"✓ no drift: {len(checks) - len(unchecked)} objects and GPU nodes match {args.answers}\n")
    return code


async def _helm_checks(cluster: Cluster, rendered: Rendered, policies: list[dict[str, Any]]) -> list[Check]:
    """The Helm release that manages the live ClusterPolicy, as Helm recorded it, against the values the plan
    computes (none when no release manages it; a skipped check when its record cannot be read)."""
    from wizard.bundled import operator_values
    from wizard.cluster.errors import ClusterError
    from wizard.engine.helm_release import ReleaseError, values_drift
    from wizard.engine.ownership import ownership_of
    from wizard.engine.render import release_values
    from wizard.engine.results import Check, Status

    owned = [(p, ownership_of(p)) for p in policies]
    found = next(((p, o) for p, o in owned if o.helm), None)
    if found is None:
        return []
    policy, owner = found
    subject = f"Helm release {owner.namespace}/{owner.release}"
    try:
        release = await cluster.helm_release(owner.namespace, owner.release)
    except (ClusterError, ReleaseError) as exc:
        return [Check("helm-values", Status.SKIP, f"{subject}: values not compared ({exc})")]
    if release is None:
        return [Check("helm-values", Status.SKIP, f"{subject}: values not compared (no deployed release Secret)")]
    plan = rendered.plan
    planned = release_values(rendered, policy)
    return values_drift(planned, operator_values(plan.operator.bundle), release, plan.operator.version)


def _difference(check: Check) -> dict[str, Any]:
    return {
        "check": check.check,
        "node": check.node or None,
        "object": check.data.get("object"),
        "field": check.data.get("field"),
        "plan": check.data.get("plan"),
        "live": check.data.get("live"),
        "message": check.message,
        "hint": check.hint,
    }
