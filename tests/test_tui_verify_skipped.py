"""The TUI's Verify step never says "verified" when a check could not run, nor hides a probe pod left behind.

A demo cluster that simulates no registry (no registry advertisement) gives the Verify step no
registry client: the digest checks are SKIPPED with that reason, the table shows SKIPPED, the
summary counts them, the report is not ok, and the exit code is 1. Host probe pods whose DELETE
fails (the demo's fault injection) are notified and reported with their ``kubectl delete`` command.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from screens.report import report_data, report_markdown
from tests.helpers.tui import apply_and_roll_out, demo_app, next_to, set_field, verified, walk_to
from tests.snapshots.plugin import wait_for


async def test_verify_without_a_registry_shows_skipped_not_verified(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(120, 30)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: bool(app.state.images), what="the registry check")
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot)

        @contextlib.asynccontextmanager
        async def no_registry(plan: Any = None) -> AsyncIterator[Any]:
            yield None  # what open_registry gives on a demo that advertises no registry

        app.open_registry = no_registry  # type: ignore[method-assign]
        text = " ".join((await verified(pilot)).split())
    assert "✓ verified" not in text
    assert "- not verified: 2 GPU node(s), 11 checks passed, 2 SKIPPED (image-digest: this demo cluster" in text
    assert "- gpu-h200-01 image-digest: registry digest not checked: this demo cluster simulates no registry" in text
    assert "- SKIPPED" in text  # the digest column
    assert app.exit_code == 1
    data = report_data(app.state)
    assert data["ok"] is False and len(data["skipped"]) == 2
    assert "✗ not verified (2 checks SKIPPED: they could not run)" in report_markdown(app.state)
    assert "| gpu-h200-01 | image-digest | - SKIPPED registry digest not checked:" in report_markdown(app.state)


async def test_a_probe_daemonset_left_behind_is_notified_and_reported(tui_env: Path) -> None:
    app = demo_app(tui_env, "preinstalled")
    async with app.run_test(size=(100, 30)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-preinstalled")
        await pilot.pause()
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await next_to(pilot, "apply")
        await apply_and_roll_out(pilot)
        faults = app._demo_cluster.faults  # the host probe's DaemonSet cannot be deleted
        faults.only, faults.methods = ["/apis/apps/v1/namespaces/gpu-operator/daemonsets/gpu-wizard-probe-"], ["DELETE"]
        faults.error_rate = 1.0
        try:
            await verified(pilot)
        finally:
            faults.clear()
    notified = " ".join(n.message for n in app._notifications if n.title == "Probe pod left behind")
    probes = [c for c in app.state.checks if c.check == "probe-pod"]
    assert len(probes) == 1  # one DaemonSet for every node
    markdown = report_markdown(app.state)
    for check in probes:
        command = f"kubectl delete daemonset -n gpu-operator {check.data['daemonset']}"
        assert command in check.message and check.message in notified
        assert f"* ! probe-pod: privileged probe daemonset gpu-operator/{check.data['daemonset']}" in markdown
