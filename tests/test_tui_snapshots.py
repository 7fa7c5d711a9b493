"""SVG snapshots of every step at 80×24, exported by the app itself (``app.export_screenshot``).

One walk through the ``sle-micro-precompiled`` demo photographs each step as a user sees it, plus
the F1 help and the apply confirmation; a second run shows Connect without any cluster; a third walks the 5,000-node ``large`` scenario with a
long registry path (Apply and Verify are left out there: rolling out 5,000 simulated nodes takes long). Frames
hold nothing that varies between runs: no clocks or spinners (each frame is taken once its work is
done), no ports (the demo is named, not addressed), HOME-relative paths, and the backup file's
timestamp redacted. ``pytest --update-snapshots`` rewrites them (see ``tests/snapshots/plugin.py``).
A frame is named after its step (``mode``, ``mode-help``, ``long-driver``), never the step's number, so a
new step renames none of them (``tests/test_step_names.py`` checks the names).
"""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from screens.app import WizardApp
from screens.dialogs import ConfirmDialog, HelpDialog
from tests.helpers.tui import connected, next_to, on_step, set_field
from tests.snapshots.plugin import Snapshot, screen_text, wait_for

BACKUP_STAMP = {r"\d{8}T\d{6}Z": "YYYYMMDDTHHMMSSZ"}


async def test_every_step_at_80x24(tui_env: Path, snapshot: Snapshot) -> None:
    app = WizardApp(demo="sle-micro-precompiled", step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await snapshot.check(pilot, "connect")
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: "● live" in screen_text(app), what="the watch")
        await wait_for(pilot, lambda: "hosts checked" in screen_text(app), 60, "the host check, started by itself")
        await snapshot.check(pilot, "nodes")
        await next_to(pilot, "mode")
        await snapshot.check(pilot, "mode")
        await pilot.press("f1")
        await wait_for(
            pilot, lambda: isinstance(app.screen, HelpDialog) and "Upstream" in screen_text(app), what="help"
        )
        await snapshot.check(pilot, "mode-help")
        await pilot.press("escape")
        await wait_for(pilot, lambda: on_step(app, "mode"), what="the help to close")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: "present in target" in screen_text(app), what="the image status")
        await snapshot.check(pilot, "driver")
        await next_to(pilot, "paths")
        await pilot.click("#check-paths")
        button = app.screen.query_one("#check-paths")
        await wait_for(
            pilot,
            lambda: "usable on all" in screen_text(app) and not button.has_class("-active"),  # the press flash is over
            20,
            "the node-side path checks",
        )
        await snapshot.check(pilot, "paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None and "accepted" in screen_text(app), what="dry-run")
        await snapshot.check(pilot, "preview")
        await next_to(pilot, "apply")
        await snapshot.check(pilot, "apply")
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: isinstance(app.screen, ConfirmDialog) and "create" in screen_text(app), what="confirm"
        )
        await snapshot.check(pilot, "apply-confirm")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.screen._rollout is not None and app.screen._rollout.done, 60, "rollout")
        await snapshot.check(pilot, "apply-rollout", redact=BACKUP_STAMP)
        await next_to(pilot, "verify")
        await wait_for(pilot, lambda: app.state.checks and not app.screen._verifying, 60, "verification")
        await snapshot.check(pilot, "verify")
    snapshot.verify()


async def test_connect_without_a_cluster_offers_the_demo(tui_env: Path, snapshot: Snapshot) -> None:
    app = WizardApp(report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: "Try the built-in demo cluster" in screen_text(app), what="the demo offer")
        await snapshot.check(pilot, "connect-no-cluster")
    snapshot.verify()


#: A long but realistic registry path: a corporate mirror with a port and nested projects.
LONG_REGISTRY = "registry.internal.example-corporation.com:5443/platform/ml-infrastructure/nvidia-mirror"


async def test_every_step_at_80x24_with_the_longest_values(tui_env: Path, snapshot: Snapshot) -> None:
    """5,000 nodes in four kernel groups and a long registry path: every frame stays readable at 80×24."""
    app = WizardApp(demo="large", step_delay=0.0, report_dir=tui_env)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot)
        await snapshot.check(pilot, "long-connect")
        await next_to(pilot, "nodes")
        await wait_for(pilot, lambda: "● live" in screen_text(app), 60, "the watch")
        await wait_for(pilot, lambda: "hosts checked" in screen_text(app), 60, "the sampled host check")
        await snapshot.check(pilot, "long-nodes")
        await next_to(pilot, "mode")
        await snapshot.check(pilot, "long-mode")
        await next_to(pilot, "driver")
        await set_field(pilot, "driver-version", "580.126.20")  # upstream (Ubuntu): no default version
        await set_field(pilot, "driver-repository", LONG_REGISTRY)
        await wait_for(pilot, lambda: bool(app.state.images), 30, "the image status")
        await snapshot.check(pilot, "long-driver")
        await next_to(pilot, "paths")
        await snapshot.check(pilot, "long-paths")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None and "accepted" in screen_text(app), 60, "dry-run")
        await snapshot.check(pilot, "long-preview")
        app.screen.query_one(TabbedContent).active = "tab-mirror"  # long skopeo lines: they scroll sideways
        await snapshot.check(pilot, "long-preview-mirror")
    snapshot.verify()
