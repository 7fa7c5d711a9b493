"""What must be read is never cut: Preview's blocking finding, its six tabs at 60×20, Verify's fix in full.

Pilot against the demo cluster (``kernel-drift``: gpu-h100-03's precompiled image is missing) at the
sizes a newcomer's terminal has; the words are compared as shown, joined across wrapped lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tui import demo_app, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("size", [(80, 24), (60, 20)])
async def test_preview_shows_the_blocking_finding_in_full_and_every_tab(tui_env: Path, size: tuple[int, int]) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=size) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await pilot.pause()
        text = screen_text(app)
        shown = _words(text)
        assert (
            "✗ nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04 is missing in the target registry: "
            "1 node(s) cannot pull it" in shown
        ), text
        rows = text.splitlines()
        tabs = rows[next(i for i, line in enumerate(rows) if "━" in line) - 1]  # the row above the tab underline
        titles = (
            ("Policy", "NVD", "Mirror", "Helm", "Diff", "Warnings")
            if size[0] < 80
            else ("ClusterPolicy", "NVIDIADriver", "Mirror plan", "Helm values", "Diff vs live", "Warnings")
        )
        assert all(title in tabs for title in titles), tabs


@pytest.mark.parametrize("size", [(80, 24), (130, 30)])
async def test_verify_shows_the_diagnosis_fix_in_full(tui_env: Path, size: tuple[int, int]) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=size) as pilot:
        await walk_to(pilot)
        app.prefill_from_live()  # the plan is what runs
        app.goto("verify")
        await wait_for(pilot, lambda: on_step(app, "verify") and bool(app.state.diagnosis), 60, "the diagnosis")
        await pilot.pause()
        text = screen_text(app)
        assert (
            "fix: Run `gpu-wizard check-kernel 5.15.0-1063-nvidia` to see whether a precompiled image for it exists "
            "(then mirror it where the node pulls from: `gpu-wizard mirror`) or is coming; until then pin or roll back the kernel on gpu-h100-03, or switch to upstream mode "
            "(driver.usePrecompiled: false, which compiles for any kernel with headers available)." in _words(text)
        ), text
        assert "✗ not verified: 2 check(s) failed on cluster, gpu-h100-03" in text  # the summary line is no check
