"""Bad answers typed into the TUI: the same message as the answers file gets, beside the field, and Next blocked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Button, Static

from screens.widgets.field import AnswerField
from tests.helpers.offline import offline_app
from tests.snapshots.plugin import screen_text
from wizard.engine.answers import AnswersError, parse_answers

ZERO_DIGEST = "sha256:" + "0" * 64

TYPED: list[tuple[str, str, str, str, str]] = [
    # (id, step, field id, typed text, words of the message)
    ("version-os-suffix", "driver", "driver-version", "580.126.09.1-sle-micro5.5", "OS suffix"),
    ("version-garbage", "driver", "driver-version", "latest", "is not a driver version"),
    ("digest-in-precompiled", "driver", "driver-version", ZERO_DIGEST, "not supported in precompiled"),
    ("repository-with-scheme", "driver", "driver-repository", "https://r.io/mlops", "URL scheme"),
    ("repository-uppercase", "driver", "driver-repository", "r.io/Mlops", "not a registry/repository"),
    ("image-with-tag", "driver", "driver-image", "nvidia-driver:1", "carries a tag"),
    ("pull-secret-name", "driver", "driver-imagePullSecrets", "reg cred", "Secret name"),
    ("relative-installdir", "paths", "toolkit-installDir", "opt/nvidia", "is not an absolute path"),
    ("unnormalised-driver-dir", "paths", "hostPaths-driverInstallDir", "/run//nvidia/", "write it as '/run/nvidia'"),
    # issue 25, item 5: the toolkit in the driver's folder was accepted
    ("toolkit-is-driver-dir", "paths", "toolkit-installDir", "/run/nvidia/driver", "is driverInstallDir"),
    ("toolkit-inside-driver-dir", "paths", "toolkit-installDir", "/run/nvidia/driver/tk", "is inside driverInstallDir"),
]


def _file_message(path: str, typed: str) -> str:
    """What the answers file says about the same value (the CLI's message)."""
    value: object = [s.strip() for s in typed.split(",")] if path == "driver.imagePullSecrets" else typed
    driver = {"version": "580.126.09.1", "repository": "r.io/mlops"}
    doc: dict[str, object] = {"version": 1, "mode": "precompiled", "driver": driver}
    section, key = path.split(".")
    doc.setdefault(section, {})[key] = value  # type: ignore[index]
    with pytest.raises(AnswersError) as err:
        parse_answers(json.dumps(doc))
    return next(e.message for e in err.value.errors if e.field == path)


@pytest.mark.parametrize(("step", "field_id", "typed", "words"), [c[1:] for c in TYPED], ids=[c[0] for c in TYPED])
async def test_typed_bad_value_is_refused_beside_its_field(
    tui_env: Path, step: str, field_id: str, typed: str, words: str
) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", step)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        field = app.screen.query_one(f"#{field_id}", AnswerField)
        field.input.focus()
        await pilot.press("home", "ctrl+k", *typed[:3])  # typed by hand, the rest pasted (fast)
        field.input.insert_text_at_cursor(typed[3:])
        await pilot.pause()
        note = str(field.query_one(".field-note", Static).content)
        assert note.startswith("✗ ") and words in note, note
        assert note == f"✗ {_file_message(field.path, typed)}"  # word for word what the answers file gets
        assert field.has_class("-invalid")
        assert app.screen.query_one("#next", Button).disabled
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.state.step == step  # Next refused
        assert "Traceback" not in screen_text(app)


async def test_unknown_release_from_an_answers_file_is_shown_beside_the_release(tui_env: Path) -> None:
    answers = tui_env / "answers.yaml"
    answers.write_text("version: 1\nmode: preinstalled\noperator: {version: v24.9.0}\n")
    app = offline_app(tui_env, "preinstalled", "mode", answers=False)
    app.answers_file = answers
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        note = str(app.screen.query_one("#release-note", Static).content)
        assert note.startswith("✗ ") and "valid: v25.10.1, v26.3.3, v26.7.0" in note, note
        assert app.screen.query_one("#next", Button).disabled
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.state.step == "mode"
