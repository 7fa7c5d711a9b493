"""The TUI, driven with Textual's Pilot at 80×24, against the real kube-apiserver and the real GPU Operator.

What a newcomer does on a real cluster, as the restricted ``wizard`` user: Connect, Nodes, Mode, Driver
(the image check against the test's real registry, which this machine's registries.conf declares
insecure, as an admin's would), Paths (the host check: one probe DaemonSet, its pods run by kwok's
probe stage), Preview (the real server's dry-run), Apply (confirmed with the keyboard; the real operator
rolls the driver out), Verify (imageID against the registry's digest, nvidia-smi per node).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    healthy_host,
    healthy_paths,
    node,
    upstream_answers,
)
from tests.snapshots.plugin import screen_text, wait_for


def _on(app: WizardApp, step: str) -> bool:
    screen = app.screen
    return app.state.step == step and type(screen).__module__ == f"screens.steps.{step}" and screen.is_mounted


async def _next(pilot: Any, step: str, timeout: float = 60) -> None:
    await pilot.press("ctrl+n")
    await wait_for(pilot, lambda: _on(pilot.app, step), timeout, f"the {step} step")


async def test_a_newcomer_walks_the_tui_to_a_verified_install_on_the_real_cluster(
    real_cluster: RealCluster,
    oci_registry: RegistryServer,
    tmp_path: Path,
    tui_env: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        *[node(f"gpu-l40s-{i}", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S") for i in range(2)],
    ]
    cluster.reset(nodes)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digest = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    answers = upstream_answers(tmp_path, cluster.release, host)
    digests = {f"{host}/nvidia/driver:{tag}": digest}
    cluster.set_stages(digests, {}, healthy_paths(answers, "/usr/local/nvidia"))  # what Paths asks the hosts
    cluster.set_driver_version(UPSTREAM_VERSION)
    conf = tmp_path / "registries.conf"
    conf.write_text(f'[[registry]]\nlocation = "{host}"\ninsecure = true\n')
    monkeypatch.setenv("CONTAINERS_REGISTRIES_CONF", str(conf))

    app = WizardApp(
        kubeconfig=str(cluster.kubeconfig("wizard")),
        answers=str(answers),
        replay=False,  # the answers prefill each step; the walk presses Next on each, as a newcomer reading it
        backup_dir=tmp_path / "backups",
        report_dir=tui_env,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.preflight is not None and _on(app, "connect"), 60, "preflight")
        text = screen_text(app)
        assert "✓ operator" in text and "DEMO" not in text, text
        await _next(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-l40s-1" in screen_text(app), 30, "the node table")
        await _next(pilot, "mode")
        assert app.state.get("mode") == "upstream"
        await _next(pilot, "driver")
        await wait_for(pilot, lambda: bool(app.state.images), 60, "the registry check")
        assert app.state.images[0].target.digest == digest, app.state.images
        await _next(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 180, "the host check")
        # the "nodes" line says where the answer came from (the Nodes step's host check, reused): not a check
        failed = [c for c in app.state.path_checks if c.status.name != "PASS" and c.check != "nodes"]
        assert not failed, failed
        cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))  # what verification asks them
        await _next(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the server's dry-run")
        assert app.state.prepared.ok, app.state.prepared.errors
        assert "✓ server dry-run accepted: create ClusterPolicy/cluster-policy" in screen_text(app)
        await _next(pilot, "apply")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the apply confirmation")
        assert "real-wizard" in screen_text(app)  # the context it writes to, named
        await pilot.press("tab", "enter")  # the focus starts on Cancel
        await wait_for(pilot, lambda: app.state.applied is not None, 60, "the apply")
        rollout = lambda: getattr(app.screen, "_rollout", None)  # noqa: E731
        await wait_for(pilot, lambda: rollout() is not None and rollout().done, 300, "the rollout")
        assert rollout().phase == "ready", rollout().message
        await _next(pilot, "verify")
        await wait_for(pilot, lambda: app.state.checks and not app.screen._verifying, 180, "verification")
        text = screen_text(app)
        assert "✓ verified: 2 GPU node(s)" in text, text
        assert f"✓ {digest[7:18]}…" in text  # the imageID the real kubelet (kwok) reports, from the registry
