"""Reading what an upgrade needs from the cluster: the running plan, who owns the policy, GPU workloads.

The decisions are the engine's (:mod:`wizard.engine.upgrade`, :mod:`wizard.engine.ownership`); this
module only gathers their inputs through the gateway, with the same paging as discovery, and asks the
registry about both the running and the new images.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.cluster.preflight import POLICY, active_policy
from wizard.engine.ownership import Ownership, ownership_of
from wizard.engine.render import Rendered, render
from wizard.engine.upgrade import UpgradePlan, plan_upgrade, upgrade_target, workloads_by_node
from wizard.registry.images import ImageStatus, check_images

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
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

    @property
    def missing(self) -> list[ImageStatus]:
        """New images the cluster cannot pull yet (the upgrade is refused while any is missing)."""
        return [status for status in self.new_images.values() if not status.ok]


async def gpu_workloads(cluster: Cluster, gpu_nodes: set[str]) -> list[dict[str, Any]]:
    """Pods not yet finished anywhere in the cluster, kept only when they run on a GPU node."""
    kept: list[dict[str, Any]] = []
    selector = "status.phase!=Succeeded,status.phase!=Failed"
    async for page in cluster.gateway.all_pod_pages(field_selector=selector):
        kept += [pod for pod in page if (pod.get("spec") or {}).get("nodeName") in gpu_nodes]
    return kept


async def prepare_upgrade(
    cluster: Cluster,
    *,
    driver_version: str,
    operator_release: str | None = None,
    current: Plan | None = None,
    registry: RegistryClient | None = None,
) -> UpgradeReport:
    """The upgrade plan for this cluster (the running plan from the live policy unless ``current`` is given)."""
    live = active_policy(await cluster.gateway.list_custom(*POLICY))
    running = current or await cluster.live_plan()
    target = upgrade_target(running, driver_version=driver_version, operator_release=operator_release)
    facts = await cluster.discover()
    before, after = render(running, facts), render(target, facts)
    pods = await gpu_workloads(cluster, {n.name for n in facts.gpu_nodes})
    policy_spec = ((live or {}).get("spec") or {}).get("driver", {}).get("upgradePolicy")
    upgrade = plan_upgrade(
        running, target, before.node_images, after.node_images, policy_spec, workloads_by_node(pods, facts)
    )
    report = UpgradeReport(upgrade, before, after, ownership_of(live), live)
    if registry is not None:
        report.old_images = {s.image: s for s in await check_images(before, registry)}
        report.new_images = {s.image: s for s in await check_images(after, registry)}
        report.registry_checked = True
    return report


async def running_driver_images(cluster: Cluster, namespace: str) -> dict[str, tuple[str, str]]:
    """``node -> (image, waiting reason)`` of the driver container of every driver pod (the driver DaemonSets)."""
    from wizard.cluster.rollout import DRIVER_CONTAINER, DRIVER_SELECTOR

    found: dict[str, tuple[str, str]] = {}
    for pod in await cluster.gateway.list_pods(namespace, label_selector=DRIVER_SELECTOR):
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
