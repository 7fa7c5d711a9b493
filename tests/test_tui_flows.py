"""End-to-end walks of the TUI against the built-in demo cluster, one per driver mode and story.

Each test starts ``gpu-wizard --demo SCENARIO`` in-process (the demo cluster runs on the app's own
event loop, ``step_delay=0``) and drives it like a user: keys, clicks, waiting for what the screen
shows. Nothing is mocked: the app talks HTTP to the demo API server through ``wizard.cluster.facade``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from textual.widgets import Checkbox

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog, HelpDialog, PathDialog
from screens.widgets.field import AnswerField
from tests.helpers.tui import (
    EXAMPLES,
    SLE_DIGEST,
    apply_and_roll_out,
    connected,
    demo_app,
    next_to,
    on_step,
    set_field,
    verified,
    walk_to,
)
from tests.snapshots.plugin import screen_text, wait_for

pytestmark = pytest.mark.slow


async def test_precompiled_on_sle_micro_to_a_passing_verify(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        assert "DEMO — simulated cluster" in screen_text(app)
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-h200-02" in screen_text(app), what="the node table")
        assert "sle-micro5.5" in screen_text(app)
        await next_to(pilot, "mode")
        assert app.state.get("mode") == "precompiled"
        await next_to(pilot, "driver")
        text = screen_text(app)
        assert "580.126.09.1" in text and "✓ validated" in text  # catalog's best version preselected
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")  # the site's mirror
        await wait_for(pilot, lambda: bool(app.state.images), what="the registry check")
        assert app.state.images[0].target.digest == SLE_DIGEST
        await next_to(pilot, "paths")
        assert app.state.get("toolkit.installDir") == "/run/nvidia/toolkit-install"  # SLE Micro profile
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        assert "✓ server dry-run accepted: create ClusterPolicy/cluster-policy" in screen_text(app)
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot)
        assert "upgrade-done" in screen_text(app) or "✓ 2/2 ready" in screen_text(app)
        text = await verified(pilot)
        assert "✓ verified: 2 GPU node(s)" in text
        assert app.state.saved_verified()  # the next run on this cluster is offered these answers
        assert "✓ 580.126.09 " in text  # nvidia-smi column: the driver the node runs
        assert f"✓ {SLE_DIGEST[7:18]}…" in text  # imageID digest matches the registry's
        assert any(line.text.startswith("imageID:") for line in app.state.log_lines)
        await pilot.click("#export")
        await wait_for(pilot, lambda: isinstance(app.screen, PathDialog), what="the export dialog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: (tui_env / "gpu-wizard-report.json").exists(), what="the report")
        report = json.loads((tui_env / "gpu-wizard-report.json").read_text())
        assert report["ok"] and report["cluster"]["demo"]
        assert "# gpu-wizard verification report" in (tui_env / "gpu-wizard-report.md").read_text()
        app.screen.query_one("#verify-table").focus()
        await pilot.press("enter")  # a node in full: every check, its hint, the raw output
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the node in full")
        assert "Raw output" in app.screen._text and "nvidia-smi" in app.screen._text
        await pilot.press("escape")
        await wait_for(pilot, lambda: on_step(app, "verify"), what="back on Verify")
        await pilot.press("ctrl+n")  # Finish
    assert app.return_value == 0
    assert app.finish_message().startswith("gpu-wizard: verified, ")


async def test_preinstalled_host_driver(tui_env: Path) -> None:
    app = demo_app(tui_env, "preinstalled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-preinstalled")  # the host driver is known to the admin, not yet to the labels
        await pilot.pause()
        assert app.state.get("mode") == "preinstalled"
        await next_to(pilot, "paths")  # Driver & registry does not apply
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        assert "enabled: false" in app.screen.tab_text("tab-policy")
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot)
        text = await verified(pilot)
        assert "✓ verified" in text


async def kubectl(app: WizardApp, *args: str) -> str:
    """Run the real kubectl against the demo cluster, as the admin would in another terminal."""
    binary = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or "kubectl"
    env = {**os.environ, "KUBECONFIG": str(app._demo_cluster.kubeconfig_path)}
    proc = await asyncio.create_subprocess_exec(
        binary, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, out.decode()
    return out.decode()


async def test_upstream_air_gapped(tui_env: Path) -> None:
    app = demo_app(tui_env, "airgapped")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        # the admin provides the package-repository files for kernel headers (the mirror's apt sources)
        await kubectl(
            app,
            "create",
            "configmap",
            "repo-config",
            "-n",
            "gpu-operator",
            "--validate=false",
            "--from-literal=sources.list=deb [trusted=yes] http://mirror.airgap.local/ubuntu jammy main",
        )
        await next_to(pilot, "nodes")
        await next_to(pilot, "mode")
        assert app.state.get("mode") == "upstream"
        assert "configurable, not validated in this release" in screen_text(app)
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await set_field(pilot, "driver-repository", "registry.airgap.local/nvidia")
        await pilot.click("#airgapped")
        await set_field(pilot, "repo-config", "repo-config")
        await pilot.pause()
        assert app.screen.query_one("#airgapped", Checkbox).value
        assert app.state.get("driver.repoConfig.configMapName") == "repo-config"
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        policy = app.screen.tab_text("tab-policy")
        assert "configMapName: repo-config" in policy and "registry.airgap.local/nvidia" in policy
        # every other image from the operator's own mirror too (issue 39): the nodes reach nothing else
        assert app.state.get("driver.operandRegistry") == "registry.airgap.local"
        assert "nvcr.io" not in policy and "registry.k8s.io" not in policy
        mirror = app.screen.tab_text("tab-mirror")
        assert "skopeo copy" in mirror and "# Every image the cluster pulls for this plan (8):" in mirror
        assert "registry.airgap.local/nvidia/k8s/container-toolkit:v1.20.0  (toolkit)" in mirror
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot, expect_warning=True)  # upstream is not validated: warned
        text = await verified(pilot)
        assert "✓ verified" in text


async def test_missing_tuple_offers_the_support_text_and_warns_before_apply(tui_env: Path) -> None:
    app = demo_app(tui_env, "missing-tuple")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: app.screen.query_one("#support").display, what="the support request")
        support = str(app.screen.query_one("#support-text").content)
        assert "5.14.21-150500.55.171-default" in support and "gpu-b-01" in support
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await pilot.click("#override")  # the missing image blocks Apply unless overridden
        await next_to(pilot, "apply")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
        await wait_for(pilot, lambda: "Apply with warnings?" in screen_text(app), what="the warning")
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog)
        assert "no published precompiled driver 580.126.09.1 for kernel 5.14.21-150500.55.171-default" in dialog.body
        await pilot.press("escape")  # cancel: nothing was sent
        await pilot.pause()
        assert app.state.applied is None


async def test_existing_install_upgrade_shows_the_diff_and_the_rollout(tui_env: Path) -> None:
    app = demo_app(tui_env, "existing-install-plain")  # Helm's policy: tests/test_tui_upgrade.py
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        assert app.state.get("mode") == "upstream"  # prefilled from the live ClusterPolicy
        assert "Running now: Upstream" in screen_text(app)
        await next_to(pilot, "driver")
        assert app.screen.query_one("#driver-version", AnswerField).value == "570.195.03"
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        assert "update ClusterPolicy/cluster-policy" in screen_text(app)
        diff = app.screen.tab_text("tab-diff")
        assert "-    version: 570.195.03" in diff and "+    version: 580.126.20" in diff
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot, expect_warning=True)
        text = screen_text(app)
        assert "upgrade-done" in text and "ready" in text
        assert app.state.applied.backup_path.exists()
        text = await verified(pilot)
        assert "✓ 580.126.20" in text


async def test_answers_replay_reaches_preview_without_a_key_press(tui_env: Path) -> None:
    answers = tui_env / "answers.yaml"
    shutil.copy(EXAMPLES / "sle-micro-precompiled.answers.yaml", answers)
    app = demo_app(tui_env, "sle-micro-precompiled", answers)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(
            pilot, lambda: on_step(app, "preview") and app.state.prepared is not None, 45, "the replay to reach Preview"
        )
        assert "✓ server dry-run accepted" in screen_text(app)
        assert app.state.applied is None  # a replay never applies
        assert not app.state.replay
        saved = answers.read_text()
        assert "repoConfig" not in saved and "airgapped" not in saved  # no defaults written into the user's file


async def test_the_node_table_follows_the_cluster(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: "● live" in screen_text(app), what="the watch")
        await kubectl(app, "label", "node", "gpu-h200-02", "nvidia.com/gpu.deploy.driver=pre-installed")
        await wait_for(pilot, lambda: "pre-installed" in screen_text(app), 15, "the label to show up")
        assert app.state.nodes["gpu-h200-02"].deploy_driver == "pre-installed"


async def test_a_host_check_finds_the_preinstalled_driver_and_the_mode_follows(tui_env: Path) -> None:
    """Before the operator runs no label tells; the Nodes step's own host check runs nvidia-smi on each host (nobody
    presses a button), and Mode recommends Pre-installed."""
    app = demo_app(tui_env, "preinstalled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-l40s-01" in screen_text(app), 30, "the node table")
        assert "Pre-installed" not in app.state.facts.recommend_mode().value.title()  # nothing known yet
        await wait_for(pilot, lambda: "hosts checked: driver on 2/2" in screen_text(app), 60, "the host check")
        assert app.state.host_drivers == {"gpu-l40s-01": "580.126.20", "gpu-l40s-02": "580.126.20"}
        assert "host 580.126.20" in screen_text(app)
        await next_to(pilot, "mode")
        await pilot.pause()
        assert "nvidia-smi passed on every GPU node's host" in screen_text(app)
        assert app.state.get("mode") == "preinstalled"  # the recommended mode is preselected
