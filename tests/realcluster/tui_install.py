"""What the lane's TUI install tests share: the real operator started once the chart's Deployment exists (beside
the Pilot), the plan's node images, the registry check's verdict and the first driver DaemonSets the operator made."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from screens.app import WizardApp
from tests.helpers.chart_parity import _chart_dir
from tests.helpers.tui import on_step
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import driver_daemonsets
from tests.snapshots.plugin import screen_text, wait_for


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


def installing_app(
    cluster: RealCluster, release: str, host: str, helm_binary: Path, tmp_path: Path, tui_env: Path, monkeypatch: Any
) -> WizardApp:
    """The TUI as an admin starts it on a cluster without the operator: the lane's helm first on PATH, the test's
    registry declared insecure in registries.conf (as an admin's would be), the release's real chart named with
    ``--chart`` (as an air-gapped site does), the admin's kubeconfig (helm creates CRDs and ClusterRoles)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "helm").symlink_to(helm_binary)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    conf = tmp_path / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "{host}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(conf))
    return WizardApp(
        kubeconfig=str(cluster.kubeconfig("admin")),
        backup_dir=tmp_path / "backups",
        report_dir=tui_env,
        chart=str(_chart_dir(release)),
    )


async def install_offered(pilot: Any, release: str) -> None:
    """Until Connect has read the cluster and says it will install ``release``."""
    app = pilot.app
    await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 60, "preflight")
    await wait_for(pilot, lambda: "with your choices" in screen_text(app), 20, "the install notice")
    said = f"GPU Operator not installed: gpu-wizard will install {release} with your choices"
    assert said in " ".join(screen_text(app).split()), screen_text(app)
