"""The TUI started at a later step with an example's node facts, as it would have them after Nodes (no cluster)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from screens.app import WizardApp
from wizard.engine.facts import facts_from_nodelist

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


def offline_app(home: Path, example: str, step: str, *, answers: bool = True, replay: bool = False) -> WizardApp:
    """The app at ``step`` with the example's node facts (and its answers file copied to HOME)."""
    answers_path = None
    if answers:
        answers_path = home / f"{example}.answers.yaml"
        shutil.copy(EXAMPLES / f"{example}.answers.yaml", answers_path)
    app = WizardApp(
        start_step=step, answers=str(answers_path) if answers_path else None, replay=replay, report_dir=home
    )
    facts = facts_from_nodelist(json.loads((EXAMPLES / f"{example}.nodes.json").read_text()))
    app.state.nodes = {n.name: n for n in facts.nodes}
    return app
