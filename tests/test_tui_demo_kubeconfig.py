"""The TUI connected to a demo cluster through its kubeconfig (``gpu-wizard demo serve`` elsewhere).

Image checks must reach the demo's registry exactly as for an in-process demo: the Driver step shows
the catalog's digest, never "host name does not resolve" for the simulated registry names.
"""

from __future__ import annotations

from pathlib import Path

from screens.app import WizardApp
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.tui import SLE_DIGEST, next_to, on_step, set_field
from tests.snapshots.plugin import screen_text, wait_for


async def test_driver_step_checks_images_in_the_demo_registry(tui_env: Path, demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    app = WizardApp(kubeconfig=str(demo.kubeconfig_path), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 30, "preflight")
        assert app.state.info.demo and app._demo_cluster is None  # a demo, but not one this app started
        await next_to(pilot, "nodes")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: bool(app.state.images), 20, "the registry check")
        (status,) = app.state.images
        assert status.target.state == "present" and status.target.digest == SLE_DIGEST
        assert "present in target" in screen_text(app)


async def test_the_demo_dropdown_shows_the_connected_servers_scenario(
    tui_env: Path, demo_cluster: ClusterFactory
) -> None:
    """Defect 15: connected to a `gpu-wizard demo serve` of another scenario, Connect's Demo dropdown showed the
    default sle-micro-precompiled. The demo's kubeconfig marker names its scenario."""
    from textual.widgets import Select

    from wizard.cluster.access.kubeconfig import demo_scenario

    demo = demo_cluster("nouveau-loaded")
    assert demo_scenario(str(demo.kubeconfig_path), "gpu-wizard-demo") == "nouveau-loaded"
    app = WizardApp(kubeconfig=str(demo.kubeconfig_path), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 30, "preflight")
        await wait_for(pilot, lambda: bool(app.screen.query("#scenario")), 10, "the Demo dropdown")
        await pilot.pause(0.2)
        assert app.state.info is not None and app.state.info.demo_scenario == "nouveau-loaded"
        assert app.screen.query_one("#scenario", Select).value == "nouveau-loaded"


async def test_the_demo_dropdown_offers_the_scenario_file_the_session_started_with(
    tmp_path: Path, tui_env: Path
) -> None:
    """Started with `--demo FILE`, Connect's Demo dropdown showed the default bundled scenario; it now shows the
    file as it was given, and "Try the demo cluster" starts that file's demo again."""
    from textual.widgets import Select

    from wizard.bundled import asset_text

    own = tmp_path / "my-lab.yaml"
    own.write_text(asset_text("scenarios", "nouveau-loaded.yaml"))
    app = WizardApp(demo=str(own), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 30, "preflight")
        await wait_for(pilot, lambda: bool(app.screen.query("#scenario")), 10, "the Demo dropdown")
        await pilot.pause(0.2)
        # the file's scenario is named nouveau-loaded, like a bundled one: the file is what this session runs
        assert app.state.info is not None and app.state.info.demo_scenario == "nouveau-loaded"
        assert app.screen.query_one("#scenario", Select).value == str(own)
