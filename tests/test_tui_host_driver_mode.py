"""A host driver loaded on the GPU nodes is a mode-choice finding (issue 35, item 2: "a working host driver ->
pre-installed"), at 80×24 and headless.

host-driver-present: gpu-h100-01 and -02 run a host driver 580.126.20, gpu-h100-03 has none. The Nodes step's host
check must not hold Next (the fix is the mode, chosen on the next step); Mode recommends Pre-installed with the ★
and marks the containerized modes refused while the host driver is loaded, saying the two ways out; Preview (the
standing findings) and apply block a containerized mode over it. ``answers init`` and ``doctor`` recommend the same.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from screens.findings import standing
from tests.helpers.tui import demo_app, next_to, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.cli.main import main


async def test_a_loaded_host_driver_is_the_mode_steps_finding(tui_env: Path) -> None:
    app = demo_app(tui_env, "host-driver-present")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert app.screen.blocker() == "", app.screen.blocker()  # the fix is the mode: Nodes holds no Next
        assert "Mode recommends Pre-installed" in text, text
        assert "choose the mode on the next step" in text, text
        await next_to(pilot, "mode")
        await pilot.pause(0.3)
        assert app.state.get("mode") == "preinstalled"  # preselected: the recommendation
        labels = {m: str(app.screen.query_one(f"#mode-{m}").label) for m in ("precompiled", "upstream", "preinstalled")}
        assert "★" in labels["preinstalled"], labels
        for mode in ("precompiled", "upstream"):
            assert "★" not in labels[mode] and "suggested" not in labels[mode], labels
            assert "✗ refused: host-driver-loaded on 2 node(s)" in labels[mode], labels
        text = " ".join(screen_text(app).split())
        assert "a host driver (580.126.20) is loaded on gpu-h100-01, gpu-h100-02" in text, text
        assert not [f for f in standing(app.state) if f.message.startswith("host-driver-loaded")]

        await pilot.click("#mode-precompiled")
        await pilot.pause(0.3)
        assert app.state.get("mode") == "precompiled"
        text = " ".join(screen_text(app).split())
        assert "Precompiled is refused: a host driver (580.126.20) is loaded on gpu-h100-01, gpu-h100-02" in text, text
        assert "Choose Pre-installed, or unload the host driver" in text, text
        held = [f for f in standing(app.state) if f.message.startswith("host-driver-loaded")]
        assert [(f.step, f.blocking) for f in held] == [("mode", True)]  # Preview (and apply) block on it


def test_answers_init_and_doctor_recommend_pre_installed_over_a_loaded_host_driver(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    written = tmp_path / "answers.yaml"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["answers", "init", "--demo", "host-driver-present", "-o", str(written)])
    assert code == 0, err.getvalue()
    text = written.read_text(encoding="utf-8")
    assert "mode: preinstalled" in text and "is loaded on gpu-h100-01, gpu-h100-02" in text, text

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["doctor", "--demo", "host-driver-present", "-o", "json"])
    doc = json.loads(out.getvalue())
    assert (code == 1 and "mode preinstalled" in err.getvalue()) or doc, (out.getvalue(), err.getvalue())
    problems = [(f["check"], f["nodes"]) for f in doc["findings"] if f["status"] in ("fail", "warn")]
    assert problems == [("no-host-driver", ["gpu-h100-03"])], problems


def test_apply_refuses_a_containerized_mode_over_a_loaded_host_driver(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: upstream\ndriver:\n  version: 580.126.20\n  repository: nvcr.io/nvidia\n", encoding="utf-8"
    )
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["apply", "--demo", "host-driver-present", "--answers", str(answers), "--dry-run"])
    said = err.getvalue()
    assert code == 1, (out.getvalue(), said)
    assert "host-driver-loaded on 2 nodes (gpu-h100-01, gpu-h100-02)" in said, said
    assert "set mode: preinstalled" in said and "nothing applied" in said, said
