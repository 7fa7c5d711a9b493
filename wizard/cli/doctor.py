"""``gpu-wizard doctor``: the known install failures, found before apply, grouped with the nodes named and the fix.

Findings come from a list of sources (:data:`SOURCES`), each an async generator of ``Check`` given the
cluster and the :class:`DoctorRun`: preflight (permissions, CRDs, operator), kernel drift of a running
precompiled driver, the driver images in the registry (with a plan that names them), the host folders
(writable, not noexec: the Paths step's check), and the host checks on every GPU node (:meth:`Cluster.host_states`), and,
once something is installed, the diagnosis of failing driver, toolkit and validator pods (:meth:`Cluster.diagnose`). The plan judged against is
``--answers``, else the live ClusterPolicy's, else the mode the nodes recommend. Exit 0: nothing found;
1: findings (a failure or a warning); 2: bad input or an unusable cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.cli import fleet, reports
from wizard.cli.common import EXIT_FAILED, EXIT_OK
from wizard.cli.images import registry_client, registry_flags
from wizard.cli.session import cluster_options, command, load_plan, open_cluster, plan_for_cluster
from wizard.engine.steps import PATHS

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.grouping import FindingGroup
    from wizard.engine.hostdoctor import DoctorTarget, HostState
    from wizard.engine.plan import Plan
    from wizard.engine.results import Check
    from wizard.registry.images import ImageStatus


def register(sub: Any) -> None:
    """Add ``doctor`` to ``gpu-wizard``'s subparsers."""
    doctor = sub.add_parser(
        "doctor",
        help="find the known install failures before apply, and explain them after (nouveau, Secure Boot, host driver…)",
        description="Runs preflight, the kernel-drift and driver-image checks, a host check on every GPU node "
        "(nouveau, Secure Boot, host driver, dkms, headers, folders, free space: one short-lived DaemonSet, host / "
        "read-only, removed after), the container runtime flavour and its toolkit settings, and, once something is "
        "installed, the diagnosis of failing driver, toolkit and validator pods (logs and events matched against known "
        "failures); prints each finding once, with the nodes that have it and the fix for their OS. "
        "Exit 0: nothing found; 1: findings (a failure or a warning); 2: bad input or an unusable cluster; "
        "130: interrupted.",
    )
    cluster_options(doctor, fleet=True)
    doctor.add_argument(
        "--answers",
        metavar="FILE",
        help="the plan to check for (default: the live policy's, else the recommended mode)",
    )
    doctor.add_argument(
        "--node", action="append", default=[], metavar="NAME", help="check only this GPU node (repeatable)"
    )
    doctor.add_argument("-o", "--output", choices=("text", "json"), default="text")
    registry_flags(doctor)
    reports.report_flags(doctor)
    doctor.set_defaults(handler=command(cmd_doctor))


@dataclass
class DoctorRun:
    """What one doctor run checks: the target, where it came from, the nodes asked for and their hosts."""

    target: DoctorTarget
    plan: Plan | None
    origin: str
    """``answers FILE``, ``the live ClusterPolicy`` or ``recommended: <reason>``."""
    nodes: list[str]
    states: dict[str, HostState] = field(default_factory=dict)
    """Each checked GPU node's host, read once (the recommendation and the host findings both use it)."""
    probe_checks: list[Check] = field(default_factory=list)
    """Probe pods that could not be deleted."""
    args: argparse.Namespace | None = None
    """The command's flags (the registry options of the image check)."""
    facts: ClusterFacts | None = None
    """The nodes, listed once for every source (at 5,000 nodes a list is ten pages)."""


LIVE_ORIGIN = "the live ClusterPolicy"
"""A run's ``origin`` when its plan is the live policy's."""

FindingSource = Callable[["Cluster", DoctorRun], AsyncIterator["Check"]]


async def _facts(cluster: Cluster, run: DoctorRun) -> ClusterFacts:
    """The nodes as :func:`doctor_run` listed them (listed now only for a run built elsewhere)."""
    if run.facts is None:
        run.facts = await cluster.discover()
    return run.facts


async def preflight_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """Preflight's checks that did not pass (a missing permission, CRD or operator)."""
    preflight = await cluster.preflight(run.plan)
    for check in preflight.checks:
        if check.status.value != "pass":
            yield check


async def kernel_drift_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """A running precompiled driver built for another kernel than its node runs now (after an OS update)."""
    from wizard.engine.kernel_drift import kernel_drift
    from wizard.engine.results import Check, Status

    preflight = await cluster.preflight(run.plan)
    if not preflight.crds:
        return
    running = await cluster.driver_pods(preflight.operator_namespace)
    for drift in kernel_drift(await _facts(cluster, run), running):
        if not run.nodes or drift.node in run.nodes:
            hint = f"gpu-wizard check-kernel {drift.kernel}"
            yield Check("kernel-drift", Status.FAIL, drift.message(), node=drift.node, hint=hint)


async def image_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """Is each driver image the plan needs where the cluster pulls from? SKIPPED without a plan that names one."""
    from wizard.engine.render import render
    from wizard.engine.results import Check, Status

    plan = run.plan
    if plan is None or not plan.driver_enabled:
        if run.target.mode.value != "preinstalled":
            why = "no plan names a driver version yet (pass --answers FILE)"
            yield Check("driver-image", Status.SKIP, f"driver images not checked: {why}")
        return
    rendered = render(plan, await _facts(cluster, run))
    if run.args is None:
        return
    async with registry_client(run.args, cluster, plan) as registry:
        statuses = await cluster.check_images(rendered, registry)
    for status in statuses:
        if status.ok:
            continue
        if status.target.error:
            check = Check("driver-image", Status.SKIP, f"{status.image}: not checked ({status.target.error})")
        elif status.mirrorable:
            message = f"{status.image} is not in the registry yet; its mirror source is"
            check = Check("driver-image", Status.WARN, message, hint="gpu-wizard mirror --run")
        else:
            message, fix = _nowhere(status)
            check = Check("driver-image", Status.FAIL, message, hint=fix)
        for node in status.nodes if not run.nodes else [n for n in status.nodes if n in run.nodes]:
            yield dataclasses.replace(check, node=node)


def _nowhere(status: ImageStatus) -> tuple[str, str]:
    """(message, fix) for a driver image missing where the cluster pulls from that no source is known to hold: never
    "mirror it" (there is nothing to copy); for a precompiled tuple, the kernel's way forward."""
    source = status.source
    where = (
        f"; its source {source.reference} does not hold it either" if source is not None and not source.error else ""
    )
    if status.catalog:  # a precompiled tuple: built per kernel
        message = (
            f"{status.image} is not where the cluster pulls from{where}: the precompiled driver for kernel "
            f"{status.kernel} ({status.tag_os}) is unpublished; driver pods would end in ImagePullBackOff"
        )
        fix = (
            f"gpu-wizard check-kernel {status.kernel}: the recipe to build it (Ubuntu) or the request to send the "
            "image's vendor; or move these nodes to a kernel with a published image"
        )
        return message, fix
    message = f"{status.image} is not where the cluster pulls from{where}: driver pods would end in ImagePullBackOff"
    if source is None:  # the cluster pulls from the source itself
        return message, "choose a version this registry holds for these nodes' OS, or push that image there"
    return message, "choose a version published for this OS (the source holds none of this tag)"


async def branch_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """The plan's driver branch against its operator release (every mode), and a downgrade of the live driver."""
    from wizard.cluster.errors import ClusterError
    from wizard.engine.branches import branch_checks

    plan = run.plan
    if plan is None:
        return
    live = ""
    if run.origin != LIVE_ORIGIN:
        with contextlib.suppress(ClusterError):  # no live policy (or not a plan): nothing to compare with
            live = (await cluster.live_plan()).driver.version
    facts = await _facts(cluster, run)
    for check in branch_checks(plan, live_version=live, tag_oses=facts.os_tags(plan.operator.version)):
        yield check


def paths_plan(run: DoctorRun | None, target: DoctorTarget) -> Plan:
    """The plan whose host folders the path check looks at: the run's, else one for ``target``'s mode
    (the release's chart-default driver stands in for the version, which the folders do not depend on)."""
    from wizard.bundled import operator_values
    from wizard.engine.plan import Plan

    if run is not None and run.plan is not None:
        return run.plan
    data: dict[str, Any] = {
        "mode": target.mode.value,
        "operator": {"version": target.release, "namespace": target.namespace},
        "toolkit": {"installDir": target.toolkit_dir},
    }
    if target.mode.value != "preinstalled":
        chart = operator_values(target.bundle)["driver"]
        repository = str(chart["repository"])  # the chart's own image: nothing to copy, no other OS's source
        data["driver"] = {
            "version": str(chart["version"]),
            "repository": repository,
            "source": repository,
            "image": str(chart["image"]),
        }
    return Plan.model_validate(data)


async def path_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """The Paths step's check (the toolkit and driver folders writable and not noexec), run by the host probe."""
    preinstalled = run.target.mode.value == "preinstalled" and run.plan is None
    for state in run.states.values():
        for check in state.path_checks:
            if check.status.value == "pass" or (preinstalled and check.check == "driver-dir"):
                continue  # a pre-installed driver under / has no driver folder to check
            yield check


async def host_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """The host checks' findings on every GPU node (or the ``--node`` ones), judged against the target."""
    from wizard.engine.hostdoctor import states_findings

    for check in run.probe_checks + states_findings(run.target, run.states):
        yield check


async def runtime_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """The container runtime flavour the GPU nodes run (containerd, CRI-O, RKE2, k3s, k0s, MicroK8s) and the
    toolkit settings the plan gives for it; GPU nodes whose flavour the one toolkit env cannot fit are a warning."""
    from wizard.engine.results import Check, Status
    from wizard.engine.runtime import runtime_advice, runtime_choice

    facts = await _facts(cluster, run)
    choice = runtime_choice(paths_plan(run, run.target), facts)
    yield Check("runtime", Status.PASS, f"container runtime: {choice.summary()}")
    for advice in runtime_advice(choice):
        status = Status.WARN if advice.level == "warning" else Status.SKIP
        nodes = [n for n, _ in choice.misfits] if advice.code == "runtime-mixed" else list(choice.nodes)
        for node in nodes or [""]:
            yield Check(advice.code, status, advice.message, node=node, hint=advice.reason)


async def diagnosis_findings(cluster: Cluster, run: DoctorRun) -> AsyncIterator[Check]:
    """After an install: why each failing GPU node's driver, toolkit or validator pod is not ready (the known
    failure its logs show, with the fix). Nothing installed yet (no plan from a live policy or answers): nothing to explain."""
    if run.plan is None:
        return
    async for check in cluster.diagnose(run.plan, nodes=run.nodes or None):
        if check.check == "diagnosis-summary" and check.ok:
            continue  # "no failing pod" is not a finding
        yield check


SOURCES: list[tuple[str, FindingSource]] = [
    ("preflight", preflight_findings),
    ("kernel-drift", kernel_drift_findings),
    ("images", image_findings),
    ("driver-branch", branch_findings),
    (PATHS.name, path_findings),  # the Paths step's check
    ("hosts", host_findings),
    ("runtime", runtime_findings),
    ("diagnosis", diagnosis_findings),
]
"""Where findings come from, in order; a new source is one more entry."""


async def doctor_run(cluster: Cluster, plan: Plan | None, answers: str, nodes: list[str]) -> DoctorRun:
    """The target (the answers' plan, else the live ClusterPolicy's, else the mode the nodes and their hosts
    recommend) and the GPU nodes' host states, read once."""
    from wizard.cluster.core.liveplan import known_release
    from wizard.cluster.errors import ClusterError
    from wizard.engine.hostdoctor import DoctorTarget, HostState
    from wizard.engine.modes import Mode

    run: DoctorRun | None = None
    if plan is not None:
        run = DoctorRun(DoctorTarget.from_plan(plan), plan, f"answers {answers}", nodes)
    preflight = await cluster.preflight(plan)
    if run is None and preflight.cluster_policy is not None:
        with contextlib.suppress(ClusterError):  # a live policy that is no valid plan: use the recommendation
            live = await cluster.live_plan()
            run = DoctorRun(DoctorTarget.from_plan(live), live, LIVE_ORIGIN, nodes)
    facts = await cluster.discover()
    provisional = (
        run.target
        if run is not None
        else DoctorTarget(
            mode=Mode.UPSTREAM,
            release=known_release(preflight.operator_release),
            namespace=preflight.operator_namespace or "gpu-operator",
            toolkit_dir=facts.recommend_toolkit_dir().value,
        )
    )
    states: dict[str, HostState] = {}
    probe_checks: list[Check] = []
    async for item in cluster.host_states(provisional, nodes or None, paths_of=paths_plan(run, provisional)):
        if isinstance(item, HostState):
            states[item.node] = item
        else:
            probe_checks.append(item)
    if run is not None and run.plan is not None:  # Secure Boot's fix names what the plan's registry lacks
        from wizard.cli.hostgate import registry_lacks

        run.target = await registry_lacks(cluster, facts, run.plan, run.target, states)
    if run is None:  # the mode the TUI's Mode step and `answers init` recommend: the hosts and the pull registry
        from wizard.cli.hostgate import driver_tags
        from wizard.engine.defaults import precompiled_repository

        booting = [name for name, s in states.items() if s.secure_boot]
        release = provisional.release
        where = precompiled_repository(facts, release, operator_image=preflight.operator_image)
        tags = await driver_tags(cluster, where) if where else None
        hosts = {n: s.host_driver for n, s in states.items() if not s.error}
        recommended = facts.recommend_mode(hosts, booting, precompiled_tags=tags, operator_release=release)
        lacks = tuple(facts.precompiled_missing(tags, release)) if tags is not None else ()
        target = dataclasses.replace(
            provisional,
            mode=Mode(recommended.value),
            precompiled_missing=lacks,
            precompiled_from=where if tags is not None else "",
        )
        run = DoctorRun(target, None, f"recommended: {recommended.reason}", nodes)
    run.states, run.probe_checks, run.facts = states, probe_checks, facts
    return run


def _is_finding(group: FindingGroup) -> bool:
    return group.status.value in ("fail", "warn")


async def cmd_doctor(args: argparse.Namespace) -> int:
    """``gpu-wizard doctor``."""
    from wizard.engine.grouping import group_findings
    from wizard.engine.textsafe import printable

    plan = load_plan(args.answers) if args.answers else None
    checks: list[Check] = []
    started = time.time()
    async with open_cluster(args) as cluster:
        context = cluster.info.context
        plan = await plan_for_cluster(cluster, plan, args.answers) if plan else None
        run = await doctor_run(cluster, plan, args.answers or "", list(args.node))
        run.args = args
        gpu = sorted(run.states) or [n.name for n in (await _facts(cluster, run)).gpu_nodes]
        if args.output == "text":
            sys.stderr.write(
                f"doctor: checked {len(gpu)} GPU node(s) for mode {run.target.mode.value}, operator "
                f"{run.target.release} (plan from {printable(run.origin)}); one short-lived host probe (a DaemonSet), removed after\n"
            )
        for _name, source in SOURCES:
            async for check in source(cluster, run):
                checks.append(check)
    groups = group_findings(checks)
    found = [g for g in groups if _is_finding(g)]
    code = EXIT_FAILED if found else EXIT_OK
    version = run.plan.driver.version if run.plan is not None else ""
    fleet.note(gpu_nodes=len(gpu), driver=fleet.driver_words(run.target.mode.value, version))
    if reports.wanted(args):
        cases = reports.cases_from_checks(checks)
        reports.record(args, reports.Suite("doctor", context, cases, started, warn_fails=True))
    if args.output == "json":
        doc = {
            "mode": run.target.mode.value,
            "operator": run.target.release,
            "planFrom": run.origin,
            "gpuNodes": len(gpu),
            "findings": [g.as_dict() for g in groups],
            "exitCode": code,
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return code
    for group in groups:
        sys.stdout.write(printable(group.line()) + "\n")
        if group.hint:
            sys.stdout.write(f"    fix: {printable(group.hint)}\n")
    skipped = sum(len(g.nodes) or 1 for g in groups if g.status.value == "skipped")
    if found:
        nodes = len({n for g in found for n in g.nodes})
        sys.stdout.write(
            f"{len(found)} finding(s) on {nodes} node(s)" + (f"; {skipped} check(s) SKIPPED" if skipped else "") + "\n"
        )
    else:
        tail = f" ({skipped} check(s) SKIPPED, see above)" if skipped else ""
        sys.stdout.write(f"✓ no findings on {len(gpu)} GPU node(s){tail}\n")
    return code
