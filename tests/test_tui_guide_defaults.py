"""Defaults a newcomer can trust (issue 25): they come from the cluster and the catalog of the nodes' own OS,
never from another OS or a public registry taken for a mirror; the image groups say one consistent thing."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Button, Select

from screens.widgets.mirror import MirrorPanel
from tests.helpers.tui import SLE_DIGEST, demo_app, next_to, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_sle_micro_target_is_required_and_the_mirror_holding_the_tags_is_offered(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        state = app.state
        # the operator runs from public nvcr.io: not a mirror, so no target is guessed (it was nvcr.io/nvidia)
        assert state.get("driver.repository") is None
        assert state.get("driver.source") == "docker.io/alaudadockerhub"
        assert app.screen.query_one("#next", Button).disabled
        use = app.screen.query_one("#use-found", Button)
        await wait_for(pilot, lambda: use.display and app.screen.query_one("#found-row").display, 20, "the find")
        assert str(use.label) == "Use registry.example.com/mlops"
        assert "Use registry.example.com/mlops  holds every tag" in screen_text(app)
        use.press()
        await wait_for(pilot, lambda: bool(state.images), 20, "the registry check")
        assert state.get("driver.repository") == "registry.example.com/mlops"
        assert state.images[0].ok and state.images[0].target.digest == SLE_DIGEST
        panel = app.screen.query_one(MirrorPanel)
        await wait_for(pilot, lambda: not panel._items, 10, "nothing left to copy")
        assert not app.screen.query_one("#next", Button).disabled


async def test_ubuntu_catalog_and_source_follow_the_nodes_os(tui_env: Path) -> None:
    app = demo_app(tui_env, "kernel-drift")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        state = app.state
        assert state.get("driver.source") == "nvcr.io/nvidia"  # the live policy's images: not Docker Hub's SLE copies
        assert state.get("driver.repository") == "nvcr.io/nvidia"
        catalog = app.screen.query_one("#catalog", Select)
        offered = [v for _, v in catalog._options if v is not Select.NULL]
        assert offered == []  # the catalog's versions are SLE Micro tuples: none is offered as validated here
        await wait_for(pilot, lambda: bool(state.images), 20, "the registry check")
        text = screen_text(app)
        assert "not in catalog" not in text
        lines = text.splitlines()
        for number, line in enumerate(lines):  # a present tag is never called absent from the catalog
            if "✓ present in target" in line:
                assert "not validated" not in lines[number - 1] or "published" in lines[number - 1]


async def test_an_unvalidated_mode_is_never_called_recommended(tui_env: Path) -> None:
    app = demo_app(tui_env, "k3s-ubuntu")  # Ubuntu whose registry holds no precompiled tag: upstream is suggested
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the Nodes step's own host check")
        await wait_for(pilot, lambda: app.state.precompiled_tags is not None, 30, "the registry's precompiled tags")
        await next_to(pilot, "mode")
        await wait_for(pilot, lambda: "Upstream  · suggested" in screen_text(app), 10, "the suggestion")
        text = screen_text(app)
        # the ★ only on a mode this release validates (issue 35, defect 21): upstream is suggested, never starred
        assert "Upstream  · suggested  · configurable, not validated in this release" in text
        assert "Suggested (configurable, not validated in this release): Upstream" in " ".join(text.split())
        assert "★" not in text
        assert "recommended" not in text.lower()


async def test_a_group_names_the_node_its_image_does_not_fit(tui_env: Path) -> None:
    app = demo_app(tui_env, "upgrade-in-progress")  # a live ClusterPolicy: one OS's image for every node
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        groups = app.screen.query_one("#groups")
        await wait_for(pilot, lambda: "ubuntu22.04 ·" in str(groups.render()), 20, "the image groups")
        text = str(groups.render())
        assert "5.15.0-1048-nvidia +1 kernel · 10 nodes" in text  # not one kernel's name for ten nodes of two
        assert "✗ gpu-h100-01 run(s) ubuntu24.04: this image does not fit" in text
        catalog = app.screen.query_one("#catalog", Select)
        await wait_for(pilot, lambda: catalog.display and len(catalog._options) > 1, 20, "the registry's versions")
        assert [v for _, v in catalog._options if v is not Select.NULL] == ["580.126.20"]  # tagged for both OSes


async def test_the_two_os_warning_is_said_once(tui_env: Path) -> None:
    from screens.findings import plan_findings

    app = demo_app(tui_env, "mixed-os")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await pilot.click("#use-crd")  # the default turned the CRD on: off again, the warning's case
        await wait_for(pilot, lambda: app.state.rendered is not None, 20, "the rendered plan")
        said = [f.message for f in plan_findings(app.state) if "OS" in f.message and "ubuntu22.04" in f.message]
        assert len(said) == 1, said
