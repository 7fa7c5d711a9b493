"""A saved run is tied to its cluster, resumes without traps, and "Start over" means the defaults (issue 16).

The answers of a run are saved beside a small state file naming the step it reached and the
cluster it ran on (demo scenario, or context and API server). Resume is offered only on that
cluster; a missing pull Secret named in the answers does not lock the user out at Connect; values
of a step that does not apply (the Driver step of a pre-installed run) never reach the plan.
"""

from __future__ import annotations

from pathlib import Path

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from tests.helpers.resume import ANSWERS, DEMO_RUN, answer_resume, saved_run
from tests.helpers.tui import connected, demo_app, next_to, on_step
from tests.snapshots.plugin import screen_text, wait_for


def notices(app: WizardApp) -> str:
    """Every notification shown so far (toasts may be off screen or wrapped)."""
    return "\n".join(f"{n.title}: {n.message}" for n in app._notifications)


async def test_a_missing_pull_secret_does_not_trap_the_resume(tui_env: Path) -> None:
    saved_run(tui_env, "paths", **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_resume(pilot, resume=True)
        await wait_for(pilot, lambda: on_step(app, "paths"), 30, "the replay to reach Paths")
        assert app.state.get("driver.imagePullSecrets") == ["mysecret"]


async def test_start_over_starts_from_the_defaults(tui_env: Path) -> None:
    answers = saved_run(tui_env, "paths", **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_resume(pilot, resume=False)
        await connected(pilot)
        assert app.state.answers == {"version": 1}
        await next_to(pilot, "nodes")  # Connect is not blocked by the old run's Secret
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        assert app.state.get("driver.version") != "565.57.01"
        assert not answers.with_name(".answers.yaml.step.json").read_text().count('"paths"')


async def test_a_run_of_another_scenario_is_not_offered(tui_env: Path) -> None:
    saved_run(tui_env, "paths", **DEMO_RUN)
    app = demo_app(tui_env, "preinstalled")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await wait_for(pilot, lambda: app.settled.is_set(), what="settled")
        assert not isinstance(app.screen, ConfirmDialog)
        assert "demo scenario sle-micro-precompiled: not resumed here" in notices(app)
        assert app.state.answers == {"version": 1}


async def test_a_run_of_another_context_is_not_offered(tui_env: Path) -> None:
    saved_run(tui_env, "paths", demo=None, context="prod", server="https://prod.example.com:6443")
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await wait_for(pilot, lambda: app.settled.is_set(), what="settled")
        assert "context prod: not resumed here" in notices(app)


async def test_a_skipped_step_s_values_never_reach_the_plan(tui_env: Path) -> None:
    answers = tui_env / "answers.yaml"
    answers.write_text(ANSWERS.replace("mode: precompiled", "mode: preinstalled"))
    app = WizardApp(demo="preinstalled", answers=str(answers), replay=False, step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        plan = app.state.plan()
        assert plan is not None and not plan.driver.version and not plan.driver.imagePullSecrets


async def test_an_answers_file_naming_a_missing_secret_can_still_leave_connect(tui_env: Path) -> None:
    answers = tui_env / "answers.yaml"
    answers.write_text(ANSWERS.replace("565.57.01", "580.126.09.1"))
    app = WizardApp(demo="sle-micro-precompiled", answers=str(answers), replay=False, step_delay=0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        assert "Secret or ConfigMap the cluster lacks" in " ".join(screen_text(app).split())
        await next_to(pilot, "nodes")


async def test_resuming_a_run_saved_mid_way_reports_no_answers_file_problems(tui_env: Path) -> None:
    from screens.state import INCOMPLETE_HEADER

    answers = saved_run(tui_env, "mode", **DEMO_RUN)
    answers.write_text(INCOMPLETE_HEADER + "version: 1\nmode: upstream\n")  # no driver.version yet
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_resume(pilot, resume=True)
        await wait_for(pilot, lambda: on_step(app, "mode"), 30, "the replay to reach Mode")
        assert "Answers file problems" not in notices(app)


async def test_a_run_stopped_at_apply_says_the_replay_stops_at_preview(tui_env: Path) -> None:
    saved_run(tui_env, "apply", **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the resume question")
        body = " ".join(app.screen.body.split())
        assert "stopped at **Apply**" in body and "up to **Preview**" in body, body
        assert "stops there" not in body
        await answer_resume(pilot, resume=True)
        await wait_for(pilot, lambda: on_step(app, "preview"), 60, "the replay to stop at Preview")


async def test_a_verified_run_is_offered_again_not_replaced_by_the_defaults(tui_env: Path) -> None:
    """Issue 25: after a verified install a restart started from the defaults and saved them over the answers."""
    answers = saved_run(tui_env, "verify", verified=True, **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the offer of the verified run")
        assert "was **verified**" in app.screen.body
        await answer_resume(pilot, resume=True)
        assert app.state.get("driver.repository") == "registry.example.com/mlops"
        await wait_for(pilot, lambda: on_step(app, "preview"), 60, "the replay to stop at Preview")
    assert "registry.example.com/mlops" in answers.read_text()


async def test_start_over_keeps_the_answers_it_replaces(tui_env: Path) -> None:
    answers = saved_run(tui_env, "verify", verified=True, **DEMO_RUN)
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await answer_resume(pilot, resume=False)
        await connected(pilot)
        await next_to(pilot, "nodes")  # saves the defaults over answers.yaml
    assert answers.with_name("answers.previous.yaml").read_text() == ANSWERS


async def test_answers_tied_to_no_cluster_are_kept_and_the_run_says_so(tui_env: Path) -> None:
    answers = saved_run(tui_env, "paths", **DEMO_RUN)
    answers.with_name(".answers.yaml.step.json").unlink()  # e.g. written by hand or `answers init`
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await wait_for(pilot, lambda: app.settled.is_set(), what="settled")
        assert "name no cluster: not used here" in notices(app)
        assert "answers.previous.yaml" in notices(app)
    assert answers.with_name("answers.previous.yaml").read_text() == ANSWERS
