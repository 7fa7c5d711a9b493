"""Where a run's answers come from at start-up: an ``--answers`` file (replayed), or a saved run of this cluster.

:func:`load_answers` runs when the app starts (after the first frame when it starts at Connect);
:func:`offer_resume` runs once Connect has reached a cluster, because a saved run is tied to the cluster
it was made on. Either sets the app's ``settled`` event, which the steps wait for before replaying.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from screens.flow import STEP_NAMES, step_named
from screens.state import INCOMPLETE_HEADER, default_answers_path, display_path, previous_path
from wizard.engine.steps import CONNECT, PREVIEW

if TYPE_CHECKING:
    from screens.app import WizardApp


def load_answers(app: WizardApp) -> None:
    """Prefill from ``--answers`` (replayed). Saved answers wait for the cluster: see :func:`offer_resume`."""
    state = app.state
    try:
        if app.answers_file is not None:
            state.load(app.answers_file, given=True)
            state.replay = app.replay_answers
        elif app.start_step != CONNECT.name:  # a later step shown directly (tests, screenshots)
            state.load(default_answers_path(), given=False)
    except Exception as exc:  # an unreadable file must not stop the wizard
        state.load_errors.append(str(exc))
    show_load_errors(app)
    if app.answers_file is not None or app.start_step != CONNECT.name:
        app.settled.set()


def show_load_errors(app: WizardApp) -> None:
    """The answers file's problems as one notification (the first six)."""
    state = app.state
    if state.load_errors:
        app.notify("\n".join(state.load_errors[:6]), title="Answers file problems", severity="warning", timeout=12)
        state.load_errors.clear()


async def offer_resume(app: WizardApp) -> None:
    """Once connected: offer to resume a saved run of this very cluster (or demo scenario), else start over.

    A saved run is tied to its cluster: a run made on another context, server or scenario is
    never resumed (its values would reach a plan the user did not make here). "Start over"
    starts from the defaults, not from the old answers, and keeps a copy of them (nothing is
    replaced without a word). A verified run is offered too: its answers are the next upgrade's
    starting point. Called by Connect; asks once.
    """
    state = app.state
    if app.settled.is_set():
        return
    state.answers_path = default_answers_path()
    saved = state.saved_step()
    if saved in STEP_NAMES and saved != CONNECT.name and state.saved_run_matches():
        from screens.dialogs import ConfirmDialog

        title, body, yes = resume_question(state.answers_path, saved, verified=state.saved_verified())
        resume = await app.push_screen_wait(ConfirmDialog(title, body, yes, "Start over"))
        _resumed(app, bool(resume))
    elif saved is not None:
        other = state.saved_run()
        where = f"demo scenario {other.get('demo')}" if other.get("demo") else f"context {other.get('context') or '?'}"
        _start_over(app, f"The saved run in {display_path(state.answers_path)} was made on {where}: not resumed here.")
    elif state.answers_path.is_file():
        _start_over(app, f"The answers in {display_path(state.answers_path)} name no cluster: not used here.")
    app.settled.set()


def replay_stop(saved: str) -> str:
    """The step a resumed run's replay stops at: where it stopped, but never past Preview (no apply is replayed)."""
    return saved if STEP_NAMES.index(saved) <= STEP_NAMES.index(PREVIEW.name) else PREVIEW.name


def resume_question(answers: Path, saved: str, *, verified: bool) -> tuple[str, str, str]:
    """The resume dialog's title, body and yes button: what was saved, and where each answer leads."""
    where = f"`{display_path(answers)}`"
    stop = step_named(replay_stop(saved)).title
    start_over = (
        f"Start over starts from the defaults (the answers are kept in `{display_path(previous_path(answers))}`)."
    )
    if verified:
        return (
            "Start from the verified run?",
            f"A previous run on this cluster was **verified**; its answers are in {where}.\n\n"
            f"Use them replays the answers up to **{stop}**: review the plan there, change what the upgrade "
            f"needs, then apply. {start_over}",
            "Use them",
        )
    stopped = step_named(saved).title
    if stop == stopped:
        replay = f"Resume replays the answers and stops at **{stop}**."
    else:
        replay = f"Resume replays the answers up to **{stop}** (an apply is never replayed): review, then apply."
    return (
        "Resume where you stopped?",
        f"A previous run on this cluster stopped at **{stopped}**; its answers are in {where}.\n\n{replay} {start_over}",
        "Resume",
    )


def _start_over(app: WizardApp, why: str) -> None:
    """Start from the defaults, saying so, with the answers that were there kept beside them."""
    kept = app.state.keep_previous_answers()
    also = f" They are kept in {display_path(kept)} (use them with --answers)." if kept else ""
    app.notify(f"{why} This run starts from the defaults.{also}", title="Saved run not resumed", timeout=10)
    app.state.start_over()


def _resumed(app: WizardApp, resume: bool) -> None:
    state = app.state
    if resume:
        saved = state.saved_step() or PREVIEW.name
        try:
            state.load(state.answers_path, given=False)
            if state.answers_path.read_text(encoding="utf-8").startswith(INCOMPLETE_HEADER):
                state.load_errors.clear()  # saved mid-way on purpose: the later steps fill the gaps
        except Exception as exc:  # an unreadable file must not stop the wizard
            state.load_errors.append(str(exc))
        show_load_errors(app)
        state.replay, state.replay_until = True, replay_stop(saved)
    else:
        state.keep_previous_answers()
        state.start_over()
