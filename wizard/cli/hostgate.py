"""The host checks ``gpu-wizard apply`` (and ``upgrade``) run before anything is written.

Nouveau holding the GPUs, Secure Boot under an unsigned driver, a host driver in the way, missing headers, a
noexec or read-only folder: each ends a rollout only minutes after apply. So before the server dry-run the
node doctor's host checks and the Paths check run in one host probe (:meth:`Cluster.host_states`) on the
sample :func:`wizard.engine.hostsample.host_sample` picks (every GPU node up to 64, else two per kernel and OS;
``--all-hosts`` for every one); a failure stops the command (exit 1, nothing written) unless
``--allow-host-findings``. A host the probe could not reach is said, not taken for a pass. The findings gone on
despite are handed on, per node, to the rollout follower (:mod:`wizard.engine.prior_findings`): a pod failing on
such a node ends the rollout at once, naming the finding.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Mapping

    from wizard.cluster.facade import Cluster
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.grouping import FindingGroup
    from wizard.engine.hostdoctor import DoctorTarget, HostState
    from wizard.engine.plan import Plan
    from wizard.engine.results import Check


def host_gate_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of the host checks before apply."""
    parser.add_argument(
        "--allow-host-findings",
        action="store_true",
        help="apply although the host checks found a problem (nouveau, Secure Boot, a host driver, a noexec folder…)",
    )
    parser.add_argument(
        "--all-hosts",
        action="store_true",
        help="check every GPU node's host before apply (default: all up to 64, else two per kernel and OS)",
    )
    parser.add_argument(
        "--no-host-check",
        action="store_true",
        help="skip the host checks before apply (they start a short-lived privileged probe pod per node)",
    )


async def host_groups(cluster: Cluster, plan: Plan, *, everything: bool) -> tuple[list[FindingGroup], str, list[Check]]:
    """The host findings for ``plan`` on the sampled GPU nodes, grouped (failures first), what was checked, and the
    findings one per node (what the rollout follower is told)."""
    from wizard.engine.grouping import group_findings
    from wizard.engine.hostdoctor import DoctorTarget, HostState, states_findings
    from wizard.engine.hostsample import host_sample

    facts = await cluster.discover()
    sample = host_sample(facts, plan.operator.version, everything=everything)
    if not sample.nodes:
        return [], "no GPU nodes", []
    states: dict[str, HostState] = {}
    checks: list[Check] = []
    async for item in cluster.host_states(plan, list(sample.nodes), paths_of=plan):
        if isinstance(item, HostState):
            states[item.node] = item
            checks += [c for c in item.path_checks if c.status.value != "pass"]
        else:
            checks.append(item)  # a probe pod left behind
    target = DoctorTarget.from_plan(plan)
    target = await registry_lacks(cluster, facts, plan, target, states)
    checks += states_findings(target, states)
    return group_findings([*checks, *secure_boot_notes(plan, states, checks)]), sample.describe(), checks


def secure_boot_notes(plan: Plan, states: Mapping[str, HostState], checks: list[Check]) -> list[Check]:
    """Secure Boot on hosts where the plan's driver loads under it (signed precompiled modules): said as a pass, so
    the person sees it was found and why it is no problem (it is often why precompiled was recommended)."""
    from wizard.engine.plan import Mode
    from wizard.engine.results import Check, Status

    if plan.mode is not Mode.PRECOMPILED:
        return []
    flagged = {c.node for c in checks if c.check.startswith("secure-boot")}
    return [
        Check("secure-boot", Status.PASS, "Secure Boot is on: the precompiled driver's modules are signed", node=node)
        for node, state in sorted(states.items())
        if state.secure_boot and node not in flagged
    ]


async def registry_lacks(
    cluster: Cluster, facts: ClusterFacts, plan: Plan, target: DoctorTarget, states: Mapping[str, HostState]
) -> DoctorTarget:
    """Secure Boot or no package source under upstream: the precompiled tags the plan's registry lacks (listed as the
    TUI lists them), so the fix names them instead of "use mode: precompiled" while that cannot work yet."""
    import dataclasses

    from wizard.engine.naming import image_repository

    precompiled_offered = target.airgapped or any(s.secure_boot or s.package_source is False for s in states.values())
    if plan.mode.value != "upstream" or not precompiled_offered:
        return target

    where = image_repository(plan.driver.repository or plan.driver.source, plan.driver.image)
    tags = await driver_tags(cluster, where)
    if tags is None:  # an unreachable registry: the fix stays the general one
        return target
    missing = tuple(facts.precompiled_missing(tags, plan.operator.version))
    return dataclasses.replace(target, precompiled_missing=missing, precompiled_from=where)


async def driver_tags(cluster: Cluster, where: str) -> list[str] | None:
    """The tags of the driver repository ``where`` (``nvcr.io/nvidia/driver``), at most ``LIST_LIMIT``; None when
    the registry cannot be asked. The one listing ``answers init``, ``doctor`` and the host gate read the
    precompiled tags through (the TUI's is :mod:`screens.registry_tags`)."""
    from wizard.engine.precompiled_tags import LIST_LIMIT
    from wizard.engine.registry_routes import repository_host

    async with cluster.open_registry([repository_host(where)]) as registry:
        try:
            return list(await registry.list_tags(where, limit=LIST_LIMIT))
        except Exception:  # unreachable, refused: nothing is known of it
            return None


def write_groups(groups: list[FindingGroup], out: TextIO) -> None:
    """Each finding once, its nodes named, with its fix."""
    from wizard.engine.textsafe import printable

    for group in groups:
        out.write(printable(group.line()) + "\n")
        if group.hint and group.status.value in ("fail", "warn"):
            out.write(f"    fix: {printable(group.hint)}\n")


UNVERIFIED_HOST_DRIVER = "no-host-driver"
"""The host finding ``--allow-unverified-preinstalled`` already overrides (pre-installed mode, nvidia-smi failing)."""


async def host_gate(
    args: argparse.Namespace, cluster: Cluster, plan: Plan
) -> tuple[bool, dict[str, tuple[Check, ...]]]:
    """Run the host checks and say what they found; False when a failure stops the apply. With it, the blocking
    findings gone on despite, per node (:func:`wizard.engine.prior_findings.by_node`), for the rollout follower."""
    from wizard.engine.prior_findings import by_node

    if getattr(args, "no_host_check", False):
        sys.stderr.write("! hosts: not checked (--no-host-check)\n")
        return True, {}
    groups, checked, checks = await host_groups(cluster, plan, everything=bool(getattr(args, "all_hosts", False)))
    shown = [g for g in groups if g.status.value != "pass"]
    write_groups([*shown, *(g for g in groups if g.check == "secure-boot" and g.status.value == "pass")], sys.stderr)
    from wizard.engine.hostdoctor import blocks_apply

    failed = [g for g in shown if blocks_apply(g.check, g.status)]
    if getattr(args, "allow_unverified_preinstalled", False):  # that finding has its own override, given
        accepted = [g for g in failed if g.check == UNVERIFIED_HOST_DRIVER]
        failed = [g for g in failed if g.check != UNVERIFIED_HOST_DRIVER]
        if accepted:
            nodes = len({n for g in accepted for n in g.nodes})
            sys.stderr.write(
                f"! hosts: no working host driver on {nodes} node(s), going on (--allow-unverified-preinstalled)\n"
            )
    more = "" if "all" in checked.split(" ", 1)[0] else "; --all-hosts checks the rest"
    if not failed:
        unchecked = len({n for g in shown if g.status.value == "skipped" for n in g.nodes})
        if unchecked:  # a check that could not run is no pass: said as such
            sys.stderr.write(f"! hosts: no blocking finding, but {unchecked} node(s) could not be checked{more}\n")
        else:
            sys.stderr.write(f"✓ hosts: no blocking finding on {checked}{more}\n")
        return True, by_node(c for c in checks if c.check == UNVERIFIED_HOST_DRIVER)
    nodes = len({n for g in failed for n in g.nodes})
    if getattr(args, "allow_host_findings", False):
        sys.stderr.write(
            f"! hosts: {len(failed)} blocking finding(s) on {nodes} node(s), going on (--allow-host-findings)\n"
        )
        return True, by_node(checks)
    sys.stderr.write(
        f"gpu-wizard: error: the host checks found {len(failed)} blocking problem(s) on {nodes} node(s) "
        f"(checked {checked}); "
        "nothing applied\n  hint: fix them on the nodes (each fix above), choose a mode they allow, "
        "or pass --allow-host-findings\n"
    )
    return False, {}
