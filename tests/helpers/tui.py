"""Driving the TUI on the in-process demo cluster: start it, wait for a step, Ctrl+N, fill a field, apply, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from screens.widgets.field import AnswerField
from tests.snapshots.plugin import screen_text, wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


#: The validated R580 SLE Micro 5.5 tuple in the sle-micro-precompiled scenario's mirror.
SLE_DIGEST = "sha256:e6da525dc703a4144b1b099762da5390adadc1a1a9863406e5deac48fb877aa4"


def demo_app(home: Path, scenario: str, answers: Path | None = None) -> WizardApp:
    """``gpu-wizard --demo SCENARIO`` with a fast simulated operator and files under ``home``."""
    return WizardApp(
        demo=scenario,
        answers=str(answers) if answers else None,
        step_delay=0.0,
        report_dir=home,
    )


def on_step(app: WizardApp, step: str) -> bool:
    """The step's screen is up and mounted."""
    screen = app.screen
    return app.state.step == step and type(screen).__module__ == f"screens.steps.{step}" and screen.is_mounted


async def connected(pilot: Any) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: app.state.preflight is not None and on_step(app, "connect"), 30, "preflight")
    assert "✓ operator" in screen_text(app)


async def walk_to(pilot: Any, *steps: str) -> None:
    """Wait for the preflight, then Ctrl+N through ``steps`` in order."""
    await connected(pilot)
    for step in steps:
        await next_to(pilot, step)


async def past_nodes(pilot: Any, *steps: str) -> None:
    """Walk to Nodes, wait for its host check (it probes the defaults' folders too: a noexec /run holds Next there),
    tick its override when something holds Next, then Ctrl+N through ``steps``."""
    app = pilot.app
    await walk_to(pilot, "nodes")
    await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
    await pilot.pause(0.2)
    if app.screen.blocker():
        await pilot.click("#override")
    for step in steps:
        await next_to(pilot, step)


async def next_to(pilot: Any, step: str) -> None:
    """Ctrl+N, then wait until ``step`` is on screen."""
    await pilot.press("ctrl+n")
    await wait_for(pilot, lambda: on_step(pilot.app, step), 20, f"the {step} step")


async def set_field(pilot: Any, field_id: str, value: str) -> None:
    """Replace a field's text as a user would (Home, delete to the end, type)."""
    field = pilot.app.screen.query_one(f"#{field_id}", AnswerField)
    field.input.focus()
    await pilot.press("home", "ctrl+k", *value)


async def apply_and_roll_out(pilot: Any, expect_warning: bool | None = False) -> None:
    """On Apply: Enter on the focused Apply button, confirm with the keyboard, wait for the rollout."""
    app = pilot.app
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the apply confirmation")
    text = screen_text(app)
    assert "gpu-wizard-demo" in text
    if expect_warning is not None:
        assert ("Apply with warnings?" in text) is expect_warning
    await pilot.press("tab", "enter")  # focus starts on Cancel
    await wait_for(pilot, lambda: app.state.applied is not None, 30, "the apply")
    await wait_for(
        pilot, lambda: getattr(app.screen, "_rollout", None) is not None and app.screen._rollout.done, 60, "rollout"
    )


async def verified(pilot: Any) -> str:
    app = pilot.app
    await next_to(pilot, "verify")
    await wait_for(pilot, lambda: app.state.checks and not app.screen._verifying, 60, "verification")
    return screen_text(app)


async def back_to(pilot: Any, step: str) -> None:
    """Esc until ``step`` is on screen."""
    app = pilot.app
    for _ in range(8):
        if on_step(app, step):
            return
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen.is_mounted and not app.screen._leaving, 20, "the step before")
    await wait_for(pilot, lambda: on_step(app, step), 20, f"the {step} step")
