"""The plan checked against the cluster before apply, in the TUI.

Paths' "Check on nodes" (node-side folder checks, per node with the reason) and Preview's check of
the objects the plan names but does not create (the repoConfig ConfigMap), which Apply then warns about.
"""

from __future__ import annotations

from pathlib import Path

from screens.dialogs import ConfirmDialog
from tests.helpers.tui import demo_app, next_to, past_nodes, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.cluster.probes.probe import PROBE_LABEL


async def test_check_on_nodes_shows_noexec_run_per_node(tui_env: Path) -> None:
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(100, 40)) as pilot:
        await past_nodes(pilot, "mode", "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the Nodes step's answer")
        await pilot.click("#check-paths")  # and again on request
        await wait_for(pilot, lambda: "path problems on" in screen_text(app), 20, "the path checks")
        text = " ".join(screen_text(app).split())  # long reasons wrap: compare the words
        for node in ("gpu-a10-01", "gpu-a10-02"):
            assert f"{node} ✓ writable, exec ✗ noexec /run" in text
        assert "✗ path problems on 2 of 2 nodes: gpu-a10-01, gpu-a10-02" in text
        assert (
            "✗ driver-dir on gpu-a10-01, gpu-a10-02: /run/nvidia/driver (to be created in /run): /run is mounted "
            "noexec: the containerized driver's nvidia-smi and libraries must execute from there"
        ) in text
        assert text.count("→ remount /run with exec on the GPU nodes") == 1  # one explanation for both nodes
        pods = await app.state.cluster.gateway.list_pods("gpu-operator", label_selector=PROBE_LABEL)
        assert pods == []  # the probe pods are gone once the results show


async def test_preview_and_apply_warn_about_a_missing_repo_config(tui_env: Path) -> None:
    app = demo_app(tui_env, "airgapped")
    async with app.run_test(size=(100, 40)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await set_field(pilot, "driver-repository", "registry.airgap.local/nvidia")
        await pilot.click("#airgapped")
        await set_field(pilot, "repo-config", "repo-config")  # named, but nobody created it
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        text = " ".join(screen_text(app).split())
        assert "✗ driver.repoConfig.configMapName: ConfigMap repo-config not found in namespace" in text
        warnings_tab = app.screen.tab_text("tab-advice")
        assert "→ create it from the nodes' package-repository files" in warnings_tab
        await pilot.press("ctrl+n")  # a blocking finding holds Next until the user overrides it
        await pilot.pause()
        assert app.state.step == "preview" and "tick 'apply anyway'" in screen_text(app)
        assert "ConfigMap repo-config not found" in " ".join(n.message for n in app._notifications)
        await pilot.click("#override")
        await next_to(pilot, "apply")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog) and "Apply with warnings?" in screen_text(app)
        assert "ConfigMap repo-config not found in namespace gpu-operator" in dialog.body
        await pilot.press("escape")
