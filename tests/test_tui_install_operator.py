"""The TUI on a cluster without the GPU Operator: Connect says it will install it, Apply says what and does it.

Pilot at 80×24 against the demo's ``no-operator`` scenario (no CRDs, no Deployment; its real HTTPS API).
Without helm on PATH the Apply step shows the command and waits; the test plays the person who runs it
(:mod:`tests.helpers.operator_chart`: the real chart rendered with the wizard's values file, applied with
a real kubectl). The operator's first driver DaemonSet then runs the planned image.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from screens.dialogs import ConfirmDialog
from tests.helpers.fixtures.demo import Kubectl
from tests.helpers.operator_chart import run_the_printed_command
from tests.helpers.tui import demo_app, next_to, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.cluster.applying.operator_install import install_values_path

RELEASE = "v26.7.0"


async def test_connect_says_it_installs_and_apply_names_what_then_installs(
    tui_env: Path, kubectl: Kubectl, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tui_env))  # no helm: the page shows the command
    app = demo_app(tui_env, "no-operator")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot)
        said = f"GPU Operator not installed: gpu-wizard will install {RELEASE} with your choices"
        await wait_for(pilot, lambda: "with your choices" in screen_text(app), 10, "the install notice")
        assert said in " ".join(screen_text(app).split()), screen_text(app)
        screen: Any = app.screen
        assert screen.blocker() == ""
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")  # the site's mirror
        await wait_for(pilot, lambda: bool(app.state.images), what="the registry check")
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the preview")
        said = " ".join(screen_text(app).split())
        assert "✓ checked against the release's CRDs: create" in said, said
        assert "(no server dry-run: the GPU Operator is not installed; Apply installs it with these objects)" in said
        await next_to(pilot, "apply")
        assert "GPU Operator not installed:" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the install confirmation")
        text = screen_text(app)
        assert "Install the GPU Operator?" in text, text
        assert f"Install GPU Operator {RELEASE}" in text and "gpu-operator" in text
        assert f"nvcr.io/nvidia/gpu-operator:{RELEASE}" in text and "registry.example.com/mlops/nvidia-driver" in text
        assert "helm is not on PATH" in text
        done: list[str] = []
        values = install_values_path("gpu-wizard-demo")
        person = threading.Thread(
            target=run_the_printed_command, args=(RELEASE, values, kubectl, app._demo_cluster, done), daemon=True
        )
        person.start()
        await pilot.press("tab", "enter")  # focus starts on Cancel
        await wait_for(pilot, lambda: app.state.applied is not None, 120, "the install")
        person.join(timeout=30)
        assert all(line.startswith("0: ") for line in done), done
        assert app.state.applied.ok, app.state.applied.message
        apply: Any = app.screen
        await wait_for(pilot, lambda: apply._rollout is not None and apply._rollout.done, 90, "rollout")
        assert apply._rollout.phase == "ready", apply._rollout
        daemonsets = [d for d in app._demo_cluster.store.list("daemonsets") if "driver" in d["metadata"]["name"]]
        images = {c["image"] for d in daemonsets for c in d["spec"]["template"]["spec"]["containers"]}
        assert any(i.startswith("registry.example.com/mlops/nvidia-driver:580") for i in images), images
        assert not any(i.startswith("nvcr.io/nvidia/driver") for i in images), images
