"""Words a newcomer reads at 80×24 say what they mean (issue 25, cosmetic items of the Nodes, Driver and
Paths steps): a MIG node reads naturally, the Driver column has no bare "-", the NVIDIADriver note is not
cut, and a resumed Paths step checks the folders by itself."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.resume import DEMO_RUN, answer_resume, saved_run
from tests.helpers.tui import demo_app, on_step, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_a_mig_node_reads_naturally_and_the_driver_column_says_what_it_knows(tui_env: Path) -> None:
    app = demo_app(tui_env, "mig")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-a30-01" in screen_text(app), 20, "the node table")
        text = screen_text(app)
        assert "4×MIG 1g.6gb (A30)" in text and "A30-MIG" not in text
        row = next(line for line in text.splitlines() if "gpu-a30-01" in line)
        before = " - " in row and 'Driver "-" = host not checked yet' in text  # "-" explained
        after = " none " in row and "hosts checked: driver on 0/1" in text  # the check, started by itself, ran
        assert before or after, text


async def test_the_nvidiadriver_note_is_never_cut(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-os")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        app.screen.query_one("#use-crd").scroll_visible(animate=False)
        await pilot.pause()
        text = screen_text(app)
        assert "recommended: the nodes run 2 OSes" in " ".join(text.split())  # whole, wrapped if need be
        row = next(line for line in text.splitlines() if "NVIDIADriver CRD" in line)
        assert "…" not in row


async def test_a_resumed_paths_step_checks_the_folders_by_itself(tui_env: Path) -> None:
    saved_run(tui_env, "paths", **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_resume(pilot, resume=True)
        await wait_for(pilot, lambda: on_step(app, "paths"), 30, "the replay to reach Paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the node-side checks, unasked")
