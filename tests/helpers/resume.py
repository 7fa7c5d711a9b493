"""A previous run saved in the default place, and the answer to the TUI's resume question."""

from __future__ import annotations

import json
from pathlib import Path

from screens.dialogs import ConfirmDialog
from tests.snapshots.plugin import wait_for

DEMO_RUN = {"demo": "sle-micro-precompiled", "context": "gpu-wizard-demo", "server": ""}


ANSWERS = (
    "version: 1\nmode: precompiled\n"
    "driver:\n  version: 565.57.01\n  repository: registry.example.com/mlops\n  imagePullSecrets: [mysecret]\n"
)


def saved_run(home: Path, step: str, **identity: object) -> Path:
    """A previous run's answers and state file in the default place."""
    answers = home / ".config" / "gpu-wizard" / "answers.yaml"
    answers.parent.mkdir(parents=True, exist_ok=True)
    answers.write_text(ANSWERS)
    answers.with_name(".answers.yaml.step.json").write_text(json.dumps({"step": step, **identity}))
    return answers


async def answer_resume(pilot, resume: bool) -> None:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the resume question")
    await pilot.press("tab", "enter") if resume else await pilot.press("enter")  # focus starts on Start over
    await wait_for(pilot, lambda: app.settled.is_set(), what="settled")
