"""Reading what an upgrade needs from the cluster: the running plan, who owns the policy, GPU workloads.

The decisions are the engine's (:mod:`wizard.engine.upgrade`, :mod:`wizard.engine.ownership`); this
module only gathers their inputs through the gateway, with the same paging as discovery, and asks the
registry about both the running and the new images.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.engine.operator_names import DRIVER_CONTAINER, DRIVER_SELECTOR
from wizard.engine.ownership import Ownership, ownership_of
from wizard.engine.render import Rendered, render
from wizard.engine.upgrade import UpgradePlan, plan_upgrade, upgrade_in_progress, upgrade_target, workloads_by_node
from wizard.registry.images import ImageStatus, check_images

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session
    from wizard.engine.plan import Plan
    from wizard.registry.client import RegistryClient


@dataclass
class UpgradeReport:
    """An upgrade plan with the registry's answer for every image before and after, and the policy's owner."""

    plan: UpgradePlan
    current: Rendered
    target: Rendered
    ownership: Ownership
    live_policy: dict[str, Any] | None
    old_images: dict[str, ImageStatus] = field(default_factory=dict)
    new_images: dict[str, ImageStatus] = field(default_factory=dict)
    registry_checked: bool = False
    not_running: dict[str, str] = field(default_factory=dict)
    """GPU node -> why it does not run its planned image now (read when no node changes image: "nothing
    changes" must not pass for "every node runs it" while a driver pod cannot pull)."""
    skipped_because: str = "--no-registry"
    """Why the registry was not asked (said with SKIPPED beside every image when ``registry_checked`` is false)."""

    @property
    def missing(self) -> list[ImageStatus]:
        """New images the cluster cannot pull yet (the upgrade is refused while any is missing)."""
        return [status for status in self.new_images.values() if not status.ok]


async def gpu_workloads(session: Session, gpu_nodes: set[str]) -> list[dict[str, Any]]:
    """Pods not yet finished anywhere in the cluster, kept only when they run on a GPU node."""
    kept: list[dict[str, Any]] = []
    selector = "status.phase!=Succeeded,status.phase!=Failed"
    async for page in session.gateway.all_pod_pages(field_selector=selector):
        kept += [pod for pod in page if (pod.get("spec") or {}).get("nodeName") in gpu_nodes]
    return kept


async def prepare_upgrade(
    session: Session,
    *,
    driver_version: str = "",
    operator_release: str | None = None,
    current: Plan | None = None,
    target: Plan | None = None,
    registry: RegistryClient | None = None,
) -> UpgradeReport:
    """The upgrade plan for this cluster (the running plan from the live policy unless ``current`` is given).

    The target is ``target`` when given (the TUI's edited plan), else the running plan with
    ``driver_version`` (and ``operator_release``), as ``gpu-wizard upgrade`` asks.
    """
    live = await session.policy()
    running = current or await session.live_plan()
    if target is None:
        target = upgrade_target(running, driver_version=driver_version, operator_release=operator_release)
    facts = await session.discover()
    before, after = render(running, facts), render(target, facts)
    pods = await gpu_workloads(session, {n.name for n in facts.gpu_nodes})
    policy_spec = ((live or {}).get("spec") or {}).get("driver", {}).get("upgradePolicy")
    if target.driver.upgradePolicy is not None:  # the edited policy is the one the rollout will follow
        policy_spec = target.driver.upgradePolicy.cr_form()
    upgrade = plan_upgrade(
        running, target, before.node_images, after.node_images, policy_spec, workloads_by_node(pods, facts)
    )
    live_version = str((((live or {}).get("spec") or {}).get("driver") or {}).get("version") or running.driver.version)
    if any(n.upgrade_state and n.upgrade_state != "upgrade-done" for n in facts.gpu_nodes):
        problems = await driver_pod_problems(session, await session.namespace(running))
        upgrade.in_progress = upgrade_in_progress(facts, live_version, problems, workloads_by_node(pods, facts))
    report = UpgradeReport(upgrade, before, after, ownership_of(live), live)
    if not upgrade.changing_nodes and upgrade.in_progress is None and upgrade.groups:
        report.not_running = not_running(
            upgrade, await running_driver_images(session, await session.namespace(running))
        )
    if registry is not None:
        report.old_images = {s.image: s for s in await check_images(before, registry)}
        report.new_images = {s.image: s for s in await check_images(after, registry)}
        report.registry_checked = True
    return report


async def driver_pod_problems(session: Session, namespace: str) -> dict[str, str]:
    """``node -> why its driver container does not run`` (waiting reason, last exit code, image, where to look)."""
    found: dict[str, str] = {}
    for pod in await session.gateway.list_pods(namespace, label_selector=DRIVER_SELECTOR):
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        meta = pod.get("metadata") or {}
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            waiting = ((status.get("state") or {}).get("waiting") or {}).get("reason")
            if status.get("name") != DRIVER_CONTAINER or not waiting or not node:
                continue
            ended = (status.get("lastState") or {}).get("terminated") or {}
            code = f", exit code {ended['exitCode']}" if "exitCode" in ended else ""
            found[node] = (
                f"driver container {waiting}{code} running {status.get('image') or '?'} "
                f"(kubectl logs -n {namespace} {meta.get('name', '?')} -c {DRIVER_CONTAINER})"
            )
    return found


async def running_driver_images(session: Session, namespace: str) -> dict[str, tuple[str, str]]:
    """``node -> (image, waiting reason)`` of the driver container of every driver pod (the driver DaemonSets)."""
    found: dict[str, tuple[str, str]] = {}
    for pod in await session.gateway.list_pods(namespace, label_selector=DRIVER_SELECTOR):
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        image = next(
            (
                str(c.get("image") or "")
                for c in (pod.get("spec") or {}).get("containers") or []
                if c.get("name") == DRIVER_CONTAINER
            ),
            "",
        )
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        waiting = next(
            (
                str(((s.get("state") or {}).get("waiting") or {}).get("reason") or "")
                for s in statuses
                if s.get("name") == DRIVER_CONTAINER
            ),
            "",
        )
        if node and image:
            found[node] = (image, waiting)
    return found


def not_running(plan: UpgradePlan, running: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """GPU node -> why it does not run the image its group plans (no driver pod, another image, waiting)."""
    found: dict[str, str] = {}
    for group in plan.groups:
        if not group.new_image:  # pre-installed: the host's driver serves, no driver pod is planned
            continue
        for node in group.nodes:
            image, waiting = running.get(node, ("", ""))
            if not image:
                found[node] = "no driver pod"
            elif image != group.new_image:
                found[node] = f"its driver pod runs {image}"
            elif waiting:
                found[node] = f"its driver container is {waiting} ({image})"
    return found


def status_word(status: ImageStatus | None, checked: bool, skipped_because: str = "--no-registry") -> str:
    """A registry answer for one image, in words (SKIPPED when it was not or could not be asked)."""
    if not checked:
        return f"SKIPPED (registry not asked: {skipped_because})"
    if status is None:
        return "-"
    if status.ok:
        return "✓ in the registry"
    if status.target.error:
        return f"SKIPPED (cannot check: {status.target.error})"
    if status.mirrorable:
        return "✗ not in the registry yet; its mirror source exists"
    return "✗ missing"


def report_lines(report: UpgradeReport) -> list[str]:
    """The upgrade plan as text, one line each."""
    plan = report.plan
    current, target = plan.current, plan.target
    driver = (
        f"driver {current.driver.version} → {target.driver.version}"
        if target.driver.version != current.driver.version
        else f"driver {target.driver.version} (unchanged)"
    )
    operator = (
        f"operator {current.operator.version} → {target.operator.version}"
        if target.operator.version != current.operator.version
        else f"operator {current.operator.version}"
    )
    lines = [f"Upgrade plan: {driver} ({operator})"]
    why = report.ownership.why_not_apply()
    if why:
        lines.append(f"Owner: {why}")
    if plan.in_progress is not None:
        lines += plan.in_progress.lines(target.driver.version)
    lines.append("Node groups:")
    for group in plan.groups:
        shown = ", ".join(group.nodes[:3]) + (f" and {len(group.nodes) - 3} more" if len(group.nodes) > 3 else "")
        lines.append(f"  kernel {group.kernel or '-'} · {len(group.nodes)} node(s): {shown}")
        old = report.old_images.get(group.old_image)
        new = report.new_images.get(group.new_image)
        lines.append(
            f"    now    {group.old_image or '(none)'}  {status_word(old, report.registry_checked, report.skipped_because)}"
        )
        if group.changes:
            lines.append(
                f"    after  {group.new_image}  {status_word(new, report.registry_checked, report.skipped_because)}"
            )
        else:
            lines.append("    after  unchanged")
    tag_changes = plan.os_tag_changes()
    lines.append("OS tags: " + ("; ".join(tag_changes) if tag_changes else "unchanged"))
    policy = plan.policy
    whose = "this plan's" if target.driver.upgradePolicy is not None else "in force"
    lines.append(
        f"upgradePolicy ({whose}): autoUpgrade {str(policy.auto_upgrade).lower()} · maxParallelUpgrades "
        f"{policy.max_parallel_upgrades or 'no limit'} · maxUnavailable {policy.max_unavailable} · drain "
        f"{f'on ({policy.drain_timeout_seconds}s)' if policy.drain_enabled else 'off'} · podDeletion timeout "
        f"{policy.pod_deletion_timeout_seconds}s"
    )
    if plan.evictions:
        lines.append("GPU workloads evicted (pods using nvidia.com/gpu on nodes that change):")
        for node, pods in sorted(plan.evictions.items()):
            lines.append(f"  {node}: {', '.join(pods)}")
    elif plan.in_progress is not None and plan.in_progress.evictions:
        lines.append("GPU workloads evicted by this plan: none beyond those the upgrade under way evicts (above)")
    else:
        lines.append("GPU workloads evicted: none found on the nodes that change")
    nodes = len(plan.changing_nodes)
    if nodes:
        parallel = policy.parallel(nodes)
        lines.append(
            f"Estimated duration: about {plan.estimate_minutes():g} min ({nodes} node(s), {parallel} at a time; "
            "an estimate from typical per-node times, not a promise)"
        )
    elif plan.in_progress is not None:
        lines.append(
            "Nothing changes in the plan: the live policy already asks for these images (the upgrade above is "
            "still rolling them out)"
        )
    elif report.not_running:
        missing = sorted(report.not_running.items())
        lines.append(
            f"Nothing changes in the plan: the live policy already asks for these images, but {len(missing)} GPU "
            "node(s) do not run theirs:"
        )
        lines += [f"  {node}: {why}" for node, why in missing[:5]]
        if len(missing) > 5:
            lines.append(f"  and {len(missing) - 5} more")
    else:
        lines.append("Nothing changes: every GPU node already runs its planned image")
    lines += [f"note: {note}" for note in plan.notes]
    for command in mirror_commands(report):
        lines.append(f"mirror: {command}")
    return lines


def mirror_commands(report: UpgradeReport) -> list[str]:
    """The copy commands (skopeo) for every new image the cluster cannot pull yet but whose source exists."""
    from wizard.engine.textsafe import shell_command

    missing = {status.image for status in report.missing if status.mirrorable}
    return [
        shell_command(argv)
        for item in report.target.mirror
        if item.target in missing
        for argv in item.commands
        if argv[0] == "skopeo" and "copy" in argv
    ]
