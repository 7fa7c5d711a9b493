"""Preview's "Save GitOps bundle…" (the palette, issue 36 item 1) at 80x24: the deployer chosen in the dialog, the folder written with the
plan's values, image lists, README and checksums; a folder that holds files is refused in the dialog."""

from __future__ import annotations

import hashlib
from pathlib import Path

from textual.widgets import Input, Select

from screens.dialogs.bundle import BundleDialog
from tests.helpers.offline import offline_app
from tests.helpers.yaml11 import yaml11_load_all
from tests.snapshots.plugin import screen_text, wait_for


async def test_preview_saves_a_flux_bundle_of_the_plan(tui_env: Path) -> None:
    app = offline_app(tui_env, "ubuntu-upstream-airgapped", "preview")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        [command] = [c for c in app.get_system_commands(app.screen) if c.title == "Save GitOps bundle…"]
        command.callback()
        await wait_for(pilot, lambda: isinstance(app.screen, BundleDialog), what="the bundle dialog")
        dialog = app.screen
        (tui_env / "full").mkdir()
        (tui_env / "full" / "keep").write_text("")
        dialog.query_one("#folder", Input).value = str(tui_env / "full")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is dialog and "not an empty folder" in screen_text(app)
        assert "Save a GitOps bundle of this plan" in screen_text(app)
        dialog.query_one("#deployer", Select).value = "flux"
        dialog.query_one("#folder", Input).value = str(tui_env / "flux-bundle")
        await pilot.press("enter")
        out = tui_env / "flux-bundle"
        await wait_for(pilot, lambda: (out / "SHA256SUMS").exists(), what="the bundle")
    docs = {d["kind"]: d for d in yaml11_load_all((out / "helmrelease.yaml").read_text()) if d}
    assert docs["HelmRelease"]["spec"]["values"]["driver"]["repoConfig"] == {"configMapName": "repo-config"}
    assert docs["HelmRelease"]["spec"]["install"]["crds"] == "CreateReplace"
    assert (out / "images" / "images.txt").read_text().strip()
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


async def test_the_palette_offers_the_bundle_only_on_preview(tui_env: Path) -> None:
    app = offline_app(tui_env, "sle-micro-precompiled", "mode")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "Save GitOps bundle…" not in [c.title for c in app.get_system_commands(app.screen)]
