"""The hosts are checked before apply by default in the TUI, and an override covers only what it was given for
(issue 35: defects 2, 12 and 17).

Pilot at 80×24 against the demo cluster (its real HTTPS API): the Nodes step probes the GPU hosts on its own
once the nodes are known, names nouveau and Secure Boot with their nodes and holds Next until fixed or
overridden; an override ticked on one step never ticks another step's box nor covers a finding found later.
"""

from __future__ import annotations

from pathlib import Path

from screens.findings import blocking_reason, overridden, plan_findings
from tests.helpers.tui import demo_app, next_to, on_step, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.engine.hostdoctor import HostState


async def test_nodes_checks_the_hosts_on_its_own_and_holds_next_on_nouveau_and_secure_boot(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")  # nobody presses "Check hosts"
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check, started by itself")
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "✗ nouveau-loaded on 1 node (gpu-l40s-1)" in text, text
        assert "✗ secure-boot-unsigned on 1 node (gpu-l40s-3)" in text, text
        assert app.state.host_checked == "all 3 GPU nodes"
        # nouveau, and gpu-l40s-2's noexec /run under the defaults' driver folder; Secure Boot is Mode's
        assert app.screen.blocker() == "2 blocking host problems: fix or tick 'continue anyway'"
        await pilot.press("ctrl+n")
        await pilot.pause(0.3)
        assert on_step(app, "nodes")  # held
        await pilot.click("#override")
        assert app.screen.blocker() == ""
        assert set(app.state.overrides) == {"nodes"}
        await next_to(pilot, "mode")


async def test_an_override_on_paths_ticks_nothing_on_preview_and_covers_no_later_finding(tui_env: Path) -> None:
    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")  # the noexec /run found with the hosts
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the Nodes step's answer")
        await pilot.click("#check-paths")  # Paths' own probe: the finding is Paths' now, overridden there
        await wait_for(pilot, lambda: "continue anyway" in app.screen.blocker(), 30, "the path check")
        await pilot.click("#override")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        tick = app.screen.query_one("#override")
        assert tick.value is False  # Paths' "continue anyway" is not Preview's "I have read the blocking findings"
        assert app.screen.blocker() == ""  # the noexec finding itself was overridden where it was found
        # a finding found after the override (a host the check reaches now: nouveau on one node)
        app.state.host_states = {"gpu-a10-01": HostState("gpu-a10-01", os_id="ubuntu", nouveau=True)}
        later = [f for f in plan_findings(app.state) if f.blocking and not overridden(app.state, f)]
        assert [f.step for f in later] == ["nodes"] and "nouveau-loaded" in later[0].message
        assert blocking_reason(app.state) == "1 blocking finding: fix or tick 'apply anyway'"
        app.screen._show_advice()
        app.screen.refresh_nav()
        await pilot.pause()
        assert tick.display and tick.value is False and "nouveau-loaded" in screen_text(app)
        await pilot.press("ctrl+n")
        await pilot.pause(0.3)
        assert on_step(app, "preview")
        await pilot.click("#override")  # now ticked for what Preview lists
        assert app.screen.blocker() == "" and set(app.state.overrides) == {"paths", "preview"}


async def test_secure_boot_found_on_nodes_makes_precompiled_the_recommended_mode(tui_env: Path) -> None:
    """Defect 3: Check hosts reported secure-boot-unsigned, yet Mode still suggested Upstream."""
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        await next_to(pilot, "mode")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert app.state.get("mode") == "precompiled", text
        assert "Precompiled ★ recommended" in text and "Secure Boot is on (gpu-l40s-3)" in text, text


async def test_a_downgrade_is_a_warning_on_preview_and_apply(tui_env: Path) -> None:
    """Defect 10: 580.126.20 → 570… was said only beside the Driver step's version field."""
    from screens.apply_text import warnings

    app = demo_app(tui_env, "existing-install-plain")  # the live policy runs 570.195.03
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-version", "570.124.06")
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        said = "driver 570.195.03 → 570.124.06 is a downgrade"
        assert said in app.screen.tab_text("tab-advice")
        assert any(said in line for line in warnings(app.state))  # the Apply summary and its confirmation


async def test_an_unsupported_branch_suggests_only_versions_the_registry_holds(tui_env: Path) -> None:
    """Defect 9: 570 on v26.7.0 suggested 610.57.04, 595.91.07, 580.173.02, none in the registry."""
    from screens.widgets.field import AnswerField

    app = demo_app(tui_env, "ubuntu-upstream")  # nvcr.io holds 595.91.07, 580.126.20 and 570.195.03 for ubuntu22.04
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-upstream")
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: app.screen._registry_versions is not None, 30, "the registry's versions")
        await set_field(pilot, "driver-version", "570.195.03")
        field = app.screen.query_one("#driver-version", AnswerField)
        await wait_for(pilot, lambda: "unsupported" in " ".join(screen_text(app).split()), 10, "the branch note")
        hint = " ".join(str(field.query_one(".hint").content).split()) if field.query(".hint") else ""
        text = " ".join(screen_text(app).split())
        said = hint or text
        assert "e.g. 595.91.07" in said, said  # the release's own branch (595), as the registry holds it
        assert "610.57.04" not in said and "580.173.02" not in said  # the matrix's, which nvcr.io here lacks
        await next_to(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        warning = app.screen.tab_text("tab-advice")  # Preview's warning too (the renderer knows only the matrix)
        assert "driver 570.195.03 is on branch 570" in warning and "(595.91.07, 580.126.20)" in warning, warning
        assert "610.57.04" not in warning
    from wizard.engine.branches import branch_checks
    from wizard.engine.plan import Plan

    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "570.195.03", "repository": "nvcr.io/nvidia"}}
    )
    (check,) = branch_checks(plan, available=["580.126.20", "570.195.03"])  # no 595 in this registry
    assert "(580.126.20)" in check.hint and "610" not in check.hint
    (check,) = branch_checks(plan, available=["570.195.03"])
    assert check.hint.startswith("the registry holds no version of a supported branch")


async def test_precompiled_offers_the_branch_the_registry_holds_for_every_kernel(tui_env: Path) -> None:
    """Defect 6: precompiled on Ubuntu said "no catalog version for ubuntu22.04: type one" while the registry
    held ``580-<kernel>-ubuntu22.04``; the user had to guess ``580``."""
    from textual.widgets import Select

    from wizard.engine.precompiled_tags import held_branches

    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        await next_to(pilot, "mode")
        assert app.state.get("mode") == "precompiled"  # Secure Boot on gpu-l40s-3
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: app.state.get("driver.version") == "580", 30, "the registry's branch")
        catalog = app.screen.query_one("#catalog", Select)
        assert catalog.value == "580"
        assert app.screen.blocker() == "" or "version" not in app.screen.blocker()
    groups = [("5.15.0-1063-nvidia", "ubuntu22.04"), ("5.15.0-1048-nvidia", "ubuntu22.04")]
    tags = [
        "580-5.15.0-1063-nvidia-ubuntu22.04",
        "580-5.15.0-1048-nvidia-ubuntu22.04",
        "570-5.15.0-1063-nvidia-ubuntu22.04",
    ]
    assert held_branches(tags, groups, "v26.7.0") == ["580"]  # 570 lacks the 1048 kernel


async def test_a_replay_past_nodes_still_checks_the_hosts_before_apply(tui_env: Path) -> None:
    """An answers replay leaves Nodes as soon as the nodes are known: Preview runs the host check then, and its
    findings hold Apply there (nouveau, Secure Boot under the upstream the answers ask for)."""
    from screens.app import WizardApp

    answers = tui_env / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: upstream\noperator:\n  version: v26.7.0\n"
        "driver:\n  version: '580.126.20'\n  repository: nvcr.io/nvidia\n  source: nvcr.io/nvidia\n",
        encoding="utf-8",
    )
    app = WizardApp(demo="mixed-trouble", answers=str(answers), step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: on_step(app, "preview") or on_step(app, "paths"), 60, "the replay")
        if on_step(app, "paths"):  # the noexec /run on gpu-l40s-2 stops the replay there: overridden
            await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the path check")
            await pilot.click("#override")
            await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 60, "the dry-run")
        assert app.state.host_checked == "all 3 GPU nodes"
        text = app.screen.tab_text("tab-advice")
        assert "nouveau-loaded on 1 node (gpu-l40s-1)" in text and "secure-boot-unsigned on 1 node (gpu-l40s-3)" in text
        assert "blocking findings: fix or tick 'apply anyway'" in app.screen.blocker()


async def test_above_64_gpu_nodes_hosts_and_paths_are_checked_on_a_sample_by_themselves(tui_env: Path) -> None:
    """Bounded, yet by default: 5,000 nodes in four (kernel, OS) groups get two checked per group, the rest on request."""
    from tests.helpers.tui import connected
    from tests.helpers.walk import forward

    app = demo_app(tui_env, "large")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await forward(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the sampled host check")
        assert app.state.host_checked == "8 of 5000 GPU nodes (2 per kernel and OS)" and app.state.host_rest == 4992
        assert "Check all hosts" in screen_text(app)
        await forward(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 60, "the sampled path check")
        assert len({c.node for c in app.state.path_checks if c.node}) == 8
        # the same folders as the Nodes step's host check probed on its sample: its answer, said as a sample
        assert "host check, a sample, 8 of 5000 GPU nodes" in " ".join(screen_text(app).split())
