"""A step's first frame holds only what it shows, and Textual builds it once (issue 12: no stall over 100 ms).

Textual composes, styles and lays out every widget of a screen before its first frame, in one turn of
the event loop. These tests pin the parts that keep that turn short, without timing anything: the
Driver step mounts the form below its first view only after that view is on screen, a new step is not
styled and laid out a second time for nothing, and Preview fills only the tab shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import Static, TabbedContent

from screens.steps.driver import DriverStep
from screens.widgets.code import CodeView
from screens.widgets.field import AnswerField
from screens.widgets.mirror import MirrorPanel
from tests.helpers.offline import offline_app
from tests.helpers.tui import next_to, on_step
from tests.snapshots.plugin import screen_text, wait_for

#: Back/Next, key hints); the whole step has 72 for a precompiled plan.
DRIVER_FIRST_FRAME_MAX_WIDGETS = 55


async def test_driver_mounts_the_form_below_its_first_view_after_the_first_frame(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    first_frame: dict[str, Any] = {}
    mount_rest = DriverStep._mount_rest

    async def record_then_mount(screen: DriverStep) -> None:
        first_frame["widgets"] = len(screen.query("*"))
        first_frame["text"] = screen_text(app)
        first_frame["mirror"] = bool(screen.query(MirrorPanel))
        first_frame["support"] = bool(screen.query("#support"))
        await mount_rest(screen)

    monkeypatch.setattr(DriverStep, "_mount_rest", record_then_mount)
    async with app.run_test(size=(80, 24)) as pilot:
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: "mirror" in first_frame and app.screen.query(MirrorPanel), what="the rest")
        assert "Images per (kernel, OS) group" in first_frame["text"]  # the first view was on screen
        assert not first_frame["mirror"] and not first_frame["support"]
        assert first_frame["widgets"] <= DRIVER_FIRST_FRAME_MAX_WIDGETS, first_frame["widgets"]
        screen = app.screen
        assert not screen.query("#airgapped-row") and not screen.query("#repo-config")  # upstream only
        # the rest arrived, in the form's order, and the image check filled it
        fields = [field.path for field in screen.query(AnswerField)]
        assert fields[-2:] == ["driver.registryMirrors", "driver.registryCA"]
        await wait_for(pilot, lambda: app.state.rendered is not None and not screen.query_one("#support").display)
        panel = screen.query_one(MirrorPanel)
        assert panel.parent is screen.query_one("#driver-scroll")
        assert str(panel.query_one("#mirror-commands").render()).strip()
        # the version field has the focus, and the field mounted later takes its answer like the others
        assert screen.focused is screen.query_one("#driver-version", AnswerField).input
        screen.query_one("#registry-mirrors", AnswerField).input.value = "nvcr.io=https://mirror.example.com"
        await wait_for(pilot, lambda: app.state.get("driver.registryMirrors") is not None, what="the mirror answer")
        assert app.state.get("driver.registryMirrors") == {"nvcr.io": "https://mirror.example.com"}


async def test_a_new_step_is_neither_restyled_nor_laid_out_again_for_its_own_resize(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    restyled: list[str] = []
    resized: list[str] = []
    update_styles, screen_resized = App.update_styles, Screen._screen_resized

    def record_styles(self: App[Any], node: Any, animate: bool = True) -> None:
        if isinstance(node, DriverStep):
            restyled.append(type(node).__name__)
        update_styles(self, node, animate)

    def record_resize(self: Screen[Any], size: Any) -> None:
        resized.append(type(self).__name__)
        screen_resized(self, size)

    monkeypatch.setattr(App, "update_styles", record_styles)
    monkeypatch.setattr(Screen, "_screen_resized", record_resize)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        resized.clear()
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: app.screen.query(MirrorPanel), what="the rest of the form")
        assert restyled == []  # styled once, as its widgets were mounted
        assert resized == []  # laid out once by the resume, not again for the Resize that layout sent
        # a terminal's resize still lays the step out
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: app.screen.size == (100, 30), what="the resize")
        await wait_for(pilot, lambda: len(screen_text(app).splitlines()) >= 30, what="the new frame")
        assert "DriverStep" in resized
        assert "Next ▶" in screen_text(app).splitlines()[28]
        assert on_step(app, "driver")


async def test_preview_fills_only_the_tab_shown_and_each_other_tab_when_first_shown(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "preview")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_for(pilot, lambda: "not connected" in screen_text(app), what="the rendered tabs")
        assert [view.id for view in screen.query(CodeView)] == ["tab-policy-code"]
        assert screen.query_one(CodeView).text == screen.tab_text("tab-policy")
        assert "kind: ClusterPolicy" in screen_text(app)
        mirror = screen.tab_text("tab-mirror")  # kept for the tab, and for Save, before the tab is shown
        assert "skopeo copy" in mirror
        screen.query_one(TabbedContent).active = "tab-mirror"
        await wait_for(pilot, lambda: screen.query("#tab-mirror-code"), what="the mirror tab's view")
        await wait_for(pilot, lambda: "skopeo copy" in screen_text(app), what="the mirror plan on screen")
        assert screen.query_one("#tab-mirror-code", CodeView).text == mirror
        assert len(screen.query(CodeView)) == 2


async def test_a_keystroke_that_changes_no_message_lays_nothing_out_again(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every keystroke shows each field's error and Next's status again; the same text must not update them
    (an update lays the whole screen out: 25-35 ms of the Driver step's loop per keystroke)."""
    app = offline_app(tui_env, "sle-micro-precompiled", "driver")
    updated: list[str] = []
    update = Static.update

    def record(self: Static, *args: Any, **kwargs: Any) -> None:
        if self.has_class("field-note") or self.id == "nav-status":
            updated.append(str(self.parent.id if self.has_class("field-note") else self.id))  # type: ignore[union-attr]
        update(self, *args, **kwargs)

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.screen.query(MirrorPanel) and app.state.rendered is not None)
        field = app.screen.query_one("#driver-image", AnswerField)
        field.input.focus()
        monkeypatch.setattr(Static, "update", record)
        await pilot.press("end", *"xy")
        await wait_for(pilot, lambda: app.state.get("driver.image") == "nvidia-driverxy", what="the answer")
        assert updated == []
        await pilot.press(*" y")  # a space is not valid in an image name: that field's note changes, once
        await wait_for(pilot, lambda: field.has_class("-invalid"), what="the field's error")
        assert updated.count("driver-image") == 1 and updated.count("nav-status") == 1, updated
