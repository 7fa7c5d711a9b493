"""TUI steps that need no cluster: Mode, Driver fields, Paths, Preview, navigation, saving, help.

Node facts come from the example NodeLists in ``assets/examples``; each test starts the app at a
later step with those facts, as the wizard would have them after Nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Button, RadioSet

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog, ErrorDialog, HelpDialog, PathDialog
from screens.state import resume_path
from screens.widgets.field import AnswerField
from tests.helpers.offline import EXAMPLES, offline_app
from tests.snapshots.plugin import screen_text, wait_for


async def test_mode_preselects_the_recommendation_with_its_reason(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode", answers=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "Precompiled  ★ recommended" in text
        assert "sle-micro 5.5 is immutable" in text
        assert "configurable, not validated in this release" in text
        assert app.state.get("mode") == "precompiled"
        radios = app.screen.query_one(RadioSet)
        assert radios.pressed_button is not None and radios.pressed_button.name == "precompiled"
        # keyboard only: move to Upstream and select it
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.state.get("mode") == "upstream"
        assert app.state.get("driver.source") == "nvcr.io/nvidia"  # the mode's default moved along
        assert "compiles" in screen_text(app)


async def test_field_error_is_shown_beside_the_field_and_blocks_next(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "driver")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        field = app.screen.query_one("#driver-version", AnswerField)
        field.input.value = "580.126.09.1-sle-micro5.5"
        await pilot.pause()
        assert "OS suffix" in screen_text(app)
        assert field.has_class("-invalid")
        assert app.screen.query_one("#next", Button).disabled
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.state.step == "driver"
        field.input.value = "580.126.09.1"
        await pilot.pause()
        assert not field.has_class("-invalid")
        assert not app.screen.query_one("#next", Button).disabled


async def test_paths_are_validated_as_you_type_and_next_saves_answers(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "paths")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        field = app.screen.query_one("#toolkit-installDir", AnswerField)
        assert field.value == "/run/nvidia/toolkit-install"
        field.input.value = "run/nvidia/toolkit"
        await pilot.pause()
        assert "not an absolute path" in screen_text(app)
        field.input.value = "/opt/nvidia"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.state.step == "preview", what="the Preview step")
    saved = (tui_env / "sle-micro-precompiled.answers.yaml").read_text()
    assert "installDir: /opt/nvidia" in saved
    assert "# driver version only" in saved  # the user's comments survive the save
    step = json.loads(resume_path(tui_env / "sle-micro-precompiled.answers.yaml").read_text())["step"]
    assert step == "preview"


async def test_escape_goes_back_and_a_step_that_does_not_apply_is_skipped(tui_env: Path) -> None:
    app = offline_app(tui_env, "preinstalled", "paths")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "4 Driver" in screen_text(app)  # shown struck through in the strip
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.state.step == "mode", what="Mode (Driver & registry skipped)")
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.state.step == "paths", what="Paths again")


async def test_preview_shows_every_tab_and_saves_the_manifests(tui_env: Path) -> None:
    app = offline_app(tui_env, "ubuntu-upstream-airgapped", "preview")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        for tab in ("ClusterPolicy", "NVIDIADriver", "Mirror plan", "Helm values", "Diff vs live", "Warnings"):
            assert tab in text
        assert "not connected: no server dry-run" in text
        assert "kind: ClusterPolicy" in text
        await pilot.click("#save")
        await wait_for(pilot, lambda: isinstance(app.screen, PathDialog), what="the save dialog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: (tui_env / "gpu-operator-driver.yaml").exists(), what="the saved file")
        saved = (tui_env / "gpu-operator-driver.yaml").read_text()
        assert "configMapName: repo-config" in saved


async def test_f1_help_and_palette_entries(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the help dialog")
        assert "Help — Mode" in screen_text(app)
        first = app.screen
        first.query_one("#help-body").scroll_end(animate=False)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpDialog), what="the help to close")
        # the next step's F1 shows its own help in the same dialog (kept: no compose and mount again), from the top
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.state.step == "driver", what="the Driver step")
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the help dialog again")
        await pilot.pause()
        assert app.screen is first and "Help — Driver" in screen_text(app) and "Help — Mode" not in screen_text(app)
        assert first.query_one("#help-body").scroll_y == 0
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpDialog), what="the help to close")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Jump to step 1: Connect" in titles
        for title in ("Save answers", "Open report", "Switch theme"):
            assert title in titles


async def test_resume_is_offered_where_a_previous_run_stopped(tui_env: Path) -> None:
    config = tui_env / ".config" / "gpu-wizard"
    config.mkdir(parents=True)
    shutil.copy(EXAMPLES / "sle-micro-precompiled.answers.yaml", config / "answers.yaml")
    resume_path(config / "answers.yaml").write_text(
        '{"step": "paths", "demo": "sle-micro-precompiled", "context": "gpu-wizard-demo", "server": ""}\n'
    )
    app = WizardApp(demo="sle-micro-precompiled", step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), 30, "the resume question")
        await wait_for(pilot, lambda: "stopped at Paths" in screen_text(app), what="the resume text")
        await pilot.click("#yes")
        await wait_for(pilot, lambda: app.settled.is_set(), what="settled")
        assert app.state.get("driver.version") == "580.126.09.1"
        await wait_for(pilot, lambda: app.state.step == "paths", 30, "the replay to stop at Paths")


async def test_an_unreachable_cluster_is_a_dialog_saying_what_to_do(tui_env: Path) -> None:
    kubeconfig = tui_env / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n"
        "clusters: [{name: lab, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: lab, user: {token: t}}]\n"
        "contexts: [{name: lab, context: {cluster: lab, user: lab}}]\n"
    )
    app = WizardApp(kubeconfig=str(kubeconfig), report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorDialog), 30, "the error dialog")
        await wait_for(pilot, lambda: "What to do:" in screen_text(app), what="the hint")
        assert "Traceback" not in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Try the built-in demo cluster" in screen_text(app), what="the demo offer")


def test_a_bug_ends_with_one_clear_line_not_a_traceback(tmp_path: Path) -> None:
    code = (
        "import screens.steps.paths as m\n"
        "m.PathsStep.on_mount = lambda self: 1 / 0\n"
        "from screens.app import WizardApp\n"
        "app = WizardApp(start_step='paths')\n"
        "app.run(headless=True)\n"
        "raise SystemExit(app.return_code)\n"
    )
    env = {**os.environ, "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 1
    assert "gpu-wizard stopped on an unexpected error: ZeroDivisionError" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr + out.stdout
    assert "ZeroDivisionError" in (tmp_path / ".local" / "state" / "gpu-wizard" / "crash.log").read_text()


#: sha256 of the Textual code the App's one private override relies on (``WizardApp._handle_exception``): the
#: handler it extends, the traceback it replaces, and the printing of the exit renderables (Textual 8.2.8).
TEXTUAL_EXCEPTION_PATH_SHA256 = "3603dd9b1d0dbc22e52fc9bd69a4c981e2bcd422bf4b728556804d8e4f99de4d"


def test_the_one_private_textual_override_still_matches_textual() -> None:
    """A new Textual that changes how an uncaught exception is handled fails here: read its code, check that
    ``WizardApp._handle_exception`` still gives one line and the crash log, then record the new hash."""
    import hashlib
    import inspect

    from textual.app import App

    from screens.app import WizardApp

    parts = (App._handle_exception, App._fatal_error, App._print_error_renderables)
    digest = hashlib.sha256("".join(inspect.getsource(part) for part in parts).encode()).hexdigest()
    assert digest == TEXTUAL_EXCEPTION_PATH_SHA256
    private = sorted(
        name
        for name, value in vars(WizardApp).items()
        if name.startswith("_") and not name.startswith("__") and callable(value) and hasattr(App, name)
    )
    assert private == ["_handle_exception"]  # the one override of a Textual private method, explained in app.py


def test_first_frame_needs_no_engine_imports() -> None:
    code = (
        "import sys, screens.app\n"
        "heavy = [m for m in ('kubernetes', 'pydantic', 'aiohttp', 'wizard.cluster.facade', 'wizard.engine.render') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.strip() == ""


async def test_starting_the_preview_render_does_not_repr_the_nodes(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual's @work writes repr() of every argument into a worker's description unless it is given one:
    for 5,000 nodes' facts that was ~100 ms on the event loop each time Preview started its render."""
    from wizard.engine.facts import ClusterFacts

    shown: list[int] = []
    real = ClusterFacts.__repr__
    monkeypatch.setattr(ClusterFacts, "__repr__", lambda self: shown.append(1) or real(self))
    app = offline_app(tui_env, "ubuntu-upstream-airgapped", "preview")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "kind: ClusterPolicy" in screen_text(app), what="the rendered policy")
    assert shown == []


async def test_a_help_dialog_never_draws_control_characters_it_quotes(tui_env: Path) -> None:
    """The Verify step's "node in full" dialog quotes node names and raw pod output in Markdown."""
    from screens.dialogs import HelpDialog

    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.push_screen(HelpDialog("Verify — gpu-01", "## gpu-01\n\n```\nok\x1b]0;owned\x07 \x1b[2J\n```"))
        await wait_for(pilot, lambda: isinstance(app.screen, HelpDialog), what="the dialog")
        await pilot.pause()
        text = screen_text(app)
        assert "ok" in text and "\\x1b" in text  # shown as a visible escape
