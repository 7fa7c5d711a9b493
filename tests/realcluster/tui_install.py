"""What the lane's TUI install tests share: the real operator started once the chart's Deployment exists (beside
the Pilot), the plan's node images, the registry check's verdict and the first driver DaemonSets the operator made."""

from __future__ import annotations

from typing import Any

from screens.app import WizardApp
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import driver_daemonsets
from tests.snapshots.plugin import wait_for


def operator_when_installed(cluster: RealCluster, failures: list[BaseException]) -> None:
    """A thread's target: run the real operator once helm has created the chart's Deployment."""
    try:
        cluster.start_operator_when_installed()
    except BaseException as exc:  # handed to the test
        failures.append(exc)


def node_images(app: WizardApp) -> list[Any]:
    """The plan's driver image per node group (none in pre-installed mode)."""
    from wizard.engine.render import render

    return [n for n in render(app.state.plan(), app.state.facts).node_images if n.image]


def all_found(app: WizardApp, host: str) -> bool:
    """Every image the Driver step checked on ``host`` is there."""
    return all(s.ok for s in app.state.images if s.image.startswith(host))


def policy_mode(policy: dict[str, Any]) -> str:
    driver = policy["spec"]["driver"]
    if driver.get("enabled") is False:
        return "preinstalled"
    return "precompiled" if driver.get("usePrecompiled") else "upstream"


async def first_driver_daemonsets(pilot: Any, cluster: RealCluster) -> dict[str, dict[str, Any]]:
    """Every driver DaemonSet seen from the first one on (the operator's first reconcile's)."""
    found: dict[str, dict[str, Any]] = {}

    def seen() -> bool:
        found.update(driver_daemonsets(cluster))
        return bool(found)

    await wait_for(pilot, seen, 300, "the operator's first driver DaemonSets")
    return found
