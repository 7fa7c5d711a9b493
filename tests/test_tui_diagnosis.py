"""The TUI's Verify step after a failure: the diagnosis panel names the known failure, its fix and the
matching log line at 80×24; Enter on the node and the exported report (Markdown and JSON) carry it too."""

from __future__ import annotations

from pathlib import Path

from screens.report import report_data, report_markdown
from screens.widgets.diagnosis import DiagnosisPanel, diagnosis_lines
from tests.helpers.tui import connected, demo_app, on_step
from tests.snapshots.plugin import screen_text, wait_for
from wizard.engine.results import Check, Status


async def test_verify_step_diagnoses_kernel_drift_and_the_report_carries_it(tui_env: Path) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        app.prefill_from_live()  # an installed cluster: the plan is what runs
        app.goto("verify")
        await wait_for(pilot, lambda: on_step(app, "verify") and bool(app.state.diagnosis), 60, "the diagnosis")
        await pilot.pause()
        panel = app.screen.query_one(DiagnosisPanel)
        assert panel.display and panel.has_class("-shown")
        text = screen_text(app)
        assert "✗ gpu-h100-03: no precompiled driver image for the node's kernel (kernel" in text  # at 80 columns
        assert "fix: Run `gpu-wizard check-kernel 5.15.0-1063-nvidia`" in text
    markdown = report_markdown(app.state)
    assert "## Diagnosis of the failing nodes" in markdown
    assert "no precompiled driver image for the node's kernel (kernel drift) (NVIDIA/gpu-operator#1220)" in markdown
    assert 'nvidia-driver-ctr waiting | Back-off pulling image "nvcr.io/nvidia/driver:580-5.15.0-1063' in markdown
    data = report_data(app.state)
    assert data["diagnosis"][0]["data"]["findings"][0]["id"] == "precompiled-kernel-drift"


def test_panel_lines_escape_markup_and_say_skipped() -> None:
    hostile = Check(
        "diagnosis",
        Status.FAIL,
        "driver pod x: [bold red]boom[/]",
        node="gpu-1",
        hint="fix [link=x]",
        data={"findings": [{"id": "a", "title": "[b]t", "issue": "i"}], "lines": ["ctr | [blink]Key was rejected"] * 3},
    )
    unmatched = Check("diagnosis", Status.FAIL, "pod y: [i]no known failure", node="gpu-2", data={"lines": []})
    skipped = Check("diagnosis", Status.SKIP, "diagnosis could not run: forbidden")
    lines = diagnosis_lines([hostile, unmatched, skipped, Check("diagnosis-summary", Status.FAIL, "1 failing")])
    assert "gpu-2: [/]pod y: \\[i]no known failure" in lines[4]
    assert lines[0].endswith("gpu-1: [/]\\[b]t (i)") and "fix: fix \\[link=x]" in lines[1]
    assert len([line for line in lines if "Key was rejected" in line]) == 2  # the first lines only
    assert lines[-1].startswith("[$warning]- ") and "could not run" in lines[-1]
    assert not any("1 failing" in line for line in lines)
