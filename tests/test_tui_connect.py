"""Connect can be shown again in every way a user reaches it, and its context list always holds its value.

Issue 16: going back to Connect on the demo crashed with ``InvalidSelectValueError`` when the
kubeconfig's context list arrived while the context Select was still mounting. Each test here is
one way Connect is (re)built: back from a later step (Esc, the palette's jump), with and without a
kubeconfig next to the demo, a demo started from the Connect button, a context the kubeconfig no
longer has, and a resumed run.
"""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Select

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog
from tests.helpers.cluster import kubeconfig
from tests.helpers.tui import connected, demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def context_select(app: WizardApp) -> Select[str]:
    return app.screen.query_one("#context", Select)


async def back_to_connect(pilot, key: str = "escape") -> None:
    """Leave the current step for Connect (Esc, or the palette's jump) and wait until it shows the cluster."""
    app = pilot.app
    if key == "escape":
        await pilot.press("escape")
    else:
        app.goto("connect")  # what the palette's "Jump to step 1: Connect" runs
    await wait_for(pilot, lambda: on_step(app, "connect") and bool(app.screen.query("#context")), 15, "Connect")
    await pilot.pause(0.3)  # the kubeconfig's contexts arrive from a thread meanwhile


async def test_back_to_connect_on_the_demo_without_a_kubeconfig(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        for key in ("escape", "palette", "escape"):
            await back_to_connect(pilot, key)
            assert context_select(app).value == "gpu-wizard-demo"
            assert "✓ operator" in screen_text(app)
            await next_to(pilot, "nodes")


async def test_back_to_connect_on_the_demo_beside_a_kubeconfig(tui_env: Path, monkeypatch) -> None:
    config = kubeconfig(tui_env / "config", "https://127.0.0.1:9", token=None, context="prod")
    monkeypatch.setenv("KUBECONFIG", str(config))
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await back_to_connect(pilot, "palette")
        select = context_select(app)
        assert select.value == "gpu-wizard-demo"
        assert {value for _, value in select._options} >= {"prod", "gpu-wizard-demo"}


async def test_a_demo_started_from_the_connect_button_and_back(tui_env: Path) -> None:
    app = WizardApp(step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "Try the built-in demo cluster" in screen_text(app), 20, "the demo offer")
        await pilot.click("#demo")
        await connected(pilot)
        await next_to(pilot, "nodes")
        await back_to_connect(pilot)
        assert context_select(app).value == "gpu-wizard-demo"


async def test_a_context_the_kubeconfig_no_longer_has(tui_env: Path, monkeypatch) -> None:
    config = kubeconfig(tui_env / "config", "https://127.0.0.1:9", token=None, context="prod")
    monkeypatch.setenv("KUBECONFIG", str(config))
    app = WizardApp(context="staging-was-renamed", step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "staging-was-renamed is not in the kubeconfig" in screen_text(app), 20, "why")
        assert context_select(app).value is Select.NULL
        assert [value for _, value in context_select(app)._options if value is not Select.NULL] == ["prod"]


async def test_a_resumed_demo_run_back_to_connect(tui_env: Path) -> None:
    answers = tui_env / ".config" / "gpu-wizard" / "answers.yaml"
    answers.parent.mkdir(parents=True)
    answers.write_text("version: 1\nmode: precompiled\n")
    step_file = answers.with_name(".answers.yaml.step.json")
    step_file.write_text(
        json.dumps({"step": "mode", "demo": "sle-micro-precompiled", "context": "gpu-wizard-demo", "server": ""})
    )
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 20, "the resume question")
        await pilot.press("tab", "enter")  # Resume
        await wait_for(pilot, lambda: on_step(app, "mode"), 30, "the replay to stop at Mode")
        await back_to_connect(pilot, "palette")
        assert context_select(app).value == "gpu-wizard-demo"
