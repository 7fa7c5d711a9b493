"""A host finding whose fix is the mode is fixed on Mode, not overridden on Nodes (issue 35's second walk at 80×24).

secure-boot (Rocky 9.4) and mixed-trouble: the host check finds ``secure-boot-unsigned`` under the upstream Nodes
judges by; its fix is choosing the mode on the next step, so Nodes must not make a newcomer tick "continue
anyway" to reach it. It still holds Preview (and apply) while the chosen mode is one it refuses.
"""

from __future__ import annotations

from pathlib import Path

from screens.findings import standing
from tests.helpers.tui import demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_secure_boot_alone_does_not_hold_nodes(tui_env: Path) -> None:
    app = demo_app(tui_env, "secure-boot")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "secure-boot-unsigned on 2 nodes" in text, text
        assert "choose the mode on the next step" in text, text
        assert app.screen.blocker() == ""
        assert not app.screen.query_one("#override").display  # nothing for Nodes to override
        await next_to(pilot, "mode")  # no override ticked
        assert on_step(app, "mode") and "nodes" not in app.state.overrides
        app.state.set("mode", "upstream")  # a mode Secure Boot refuses: it blocks on, at Preview and apply
        held = [f for f in standing(app.state) if "secure-boot-unsigned" in f.message]
        assert held and held[0].step == "mode"


async def test_mixed_trouble_holds_nodes_only_on_nouveau(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        # nouveau, and gpu-l40s-2's noexec /run under the defaults' driver folder (probed with the hosts)
        assert app.screen.blocker() == "2 blocking host problems: fix or tick 'continue anyway'"
        held = [f.message.split(" ", 1)[0] for f in standing(app.state, "nodes")]
        assert sorted(held) == ["driver-dir", "nouveau-loaded"], held
        await pilot.click("#override")
        covered = app.state.overrides["nodes"]
        assert not any("secure-boot" in m for m in covered)  # the override covers nouveau and the noexec /run only
        assert any(m.startswith("driver-dir on gpu-l40s-2") for m in covered), covered
        await next_to(pilot, "mode")


async def test_mode_badges_no_mode_secure_boot_refuses_and_says_what_would_work(tui_env: Path) -> None:
    """secure-boot (Rocky 9.4, no precompiled tag in the registry): Mode said "Upstream · suggested" though the
    host check found Upstream refused on both nodes."""
    app = demo_app(tui_env, "secure-boot")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await next_to(pilot, "mode")
        await wait_for(pilot, lambda: app.state.precompiled_tags is not None, 30, "the registry's tags")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "suggested" not in text and "★" not in text, text
        assert "No mode works as-is: Secure Boot is on (gpu-a100-01, gpu-a100-02)" in text, text
        assert "MOK list" in text and "Pre-installed" in text, text
        assert "Precompiled, whose signed images nvcr.io/nvidia/driver lacks" in text, text
        assert "rocky9: push or mirror them there" in text, text


async def test_preview_counts_the_blocking_findings_it_shows(tui_env: Path) -> None:
    """mixed-trouble: Preview listed two ✗ findings (nouveau, and the noexec /run overridden on Paths) while its
    status line said "1 blocking finding"."""
    from textual.widgets import Static

    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the path check")
        assert app.state.path_checks_from == "nodes"  # the noexec /run was the Nodes step's: Paths holds no Next
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await pilot.pause(0.3)
        shown = str(app.screen.query_one("#blocking", Static).content)
        crosses = [line for line in shown.splitlines() if line.startswith("[$error]✗")]
        status = app.screen.blocker()
        assert status.endswith("fix or tick 'apply anyway'"), status
        count = int(status.split(" ", 1)[0])
        assert count == len(crosses), (status, shown)
        text = " ".join(screen_text(app).split())
        assert "driver-dir on gpu-l40s-2" in text, text
        assert {f.message.split(" ", 1)[0] for f in standing(app.state)} >= {"driver-dir", "nouveau-loaded"}


async def test_nodes_claims_no_problem_only_for_what_it_checked(tui_env: Path) -> None:
    """noexec-run: Nodes said "no problem found", then Paths found /run noexec on both nodes."""
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "no problem found" not in text, text
        assert "driver-dir on 2 nodes" in text, text  # the defaults' folders are probed with the hosts now


async def test_a_refused_next_toasts_the_whole_error(tui_env: Path) -> None:
    """sle-micro-precompiled: the refusal toast ended mid-sentence ("…give the registry the")."""
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: "driver.repository" in app.screen.blocker(), 10, "the missing registry")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: any(n.title == "Not yet" for n in app._notifications), 10, "the toast")
        (said,) = [n.message for n in app._notifications if n.title == "Not yet"]
        assert said.endswith("like registry.example.com/mlops"), said
        assert app.screen.blocker().endswith("…")  # beside Next: cut to one line, and shown as cut


async def test_the_apply_button_says_again_once_the_apply_was_sent(tui_env: Path) -> None:
    from textual.widgets import Button

    from tests.helpers.tui import apply_and_roll_out

    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "apply")
        button = app.screen.query_one("#apply", Button)
        assert str(button.label) == "Apply…"
        await apply_and_roll_out(pilot, expect_warning=None)
        assert app.state.applied is not None and app.state.applied.ok
        assert str(button.label) == "Apply again…"
