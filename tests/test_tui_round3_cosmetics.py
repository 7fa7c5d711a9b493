"""Words a first-time installer reads at 80×24 say what they mean (issue 35, the cosmetic items)."""

from __future__ import annotations

from pathlib import Path

from screens.steps.nodes import driver_cell
from tests.helpers.tui import demo_app, walk_to
from tests.snapshots.plugin import screen_text, wait_for


async def test_the_driver_column_says_who_provides_the_driver(tui_env: Path) -> None:
    """Defect 14: Nodes' Driver column showed ``true`` on every row, unexplained."""
    app = demo_app(tui_env, "existing-install-plain")  # the operator's driver runs: deploy.driver=true everywhere
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: "gpu-a100-01" in screen_text(app), 30, "the node table")
        row = next(line for line in screen_text(app).splitlines() if "gpu-a100-01" in line)
        assert " operator " in row and " true " not in row, row
    node = app.state.nodes["gpu-a100-01"]
    assert driver_cell(node, {}) == "operator"


async def test_the_driver_column_names_the_host_driver_under_a_disabled_operator_driver(tui_env: Path) -> None:
    """k3s-suse-helm (issue 35's walk): the Helm install runs with driver.enabled=false on hosts with 580.95.05; the
    label stays ``nvidia.com/gpu.deploy.driver=true`` (the operator's #982), and the column said ``operator``."""
    app = demo_app(tui_env, "k3s-suse-helm")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await wait_for(pilot, lambda: "host 580.95" in screen_text(app), 10, "the host driver in the table")
        table = [line for line in screen_text(app).splitlines() if "containerd" in line]  # not the findings below it
        rows = [line for line in table if "gpu-h100-s" in line]  # at 80 columns: "host 580.95."
        assert len(rows) == 2 and all(" host 580.95" in row and " operator " not in row for row in rows), rows
    node = app.state.nodes["gpu-h100-sles"]
    assert (node.deploy_driver, driver_cell(node, {"gpu-h100-sles": "580.95.05"})) == ("true", "host 580.95.05")


async def test_the_clusterpolicy_tab_names_the_policy_the_apply_updates(tui_env: Path) -> None:
    """Defect 13: the tab showed ``name: cluster-policy`` while the apply updated ``gpu-cluster-policy``."""
    from wizard.bundled import asset_text

    scenario = tui_env / "renamed.yaml"
    text = asset_text("scenarios", "existing-install-plain.yaml")
    scenario.write_text(text.replace("      name: cluster-policy\n", "      name: gpu-cluster-policy\n", 1))
    app = demo_app(tui_env, str(scenario))
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver", "paths", "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        assert "ClusterPolicy/gpu-cluster-policy" in app.state.prepared.live
        policy = app.screen.tab_text("tab-policy")
        assert "  name: gpu-cluster-policy" in policy and "name: cluster-policy" not in policy, policy


async def test_nothing_to_mirror_says_why_when_source_and_target_differ(tui_env: Path) -> None:
    """Defect 8: "the cluster pulls from the source" while the source and the target registries differ."""
    from textual.widgets import Static

    from screens.widgets.mirror import MirrorPanel
    from tests.helpers.tui import set_field

    app = demo_app(tui_env, "sle-micro-precompiled")  # the mirror holds the tags; the source is docker.io
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        await set_field(pilot, "driver-repository", "registry.example.com/mlops")
        await wait_for(pilot, lambda: bool(app.state.images), 30, "the image check")
        assert all(s.ok for s in app.state.images) and app.state.get("driver.source") != app.state.get(
            "driver.repository"
        )
        commands = app.screen.query_one(MirrorPanel).query_one("#mirror-commands", Static)
        await wait_for(pilot, lambda: "nothing to mirror" in str(commands.content), 10, "the empty mirror plan")
        said = str(commands.content)
        assert "in the target registry already" in said and "pulls from the source" not in said, said


async def test_paths_noexec_fix_scrolls_into_view_at_80x24(tui_env: Path) -> None:
    """Defect 16: Paths' noexec fix and its per-node table were cut at 80×24 and could not be scrolled."""
    from tests.helpers.tui import next_to, past_nodes, set_field

    app = demo_app(tui_env, "noexec-run")
    async with app.run_test(size=(80, 24)) as pilot:
        await past_nodes(pilot, "mode", "driver")
        await set_field(pilot, "driver-version", "580.126.20")
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the Nodes step's answer")
        await pilot.pause(0.3)
        assert "driverInstallDir does not move it" not in " ".join(screen_text(app).split())  # below the fold
        app.screen.query_one("#path-notes-scroll").focus()
        await pilot.press("end")

        def scrolled() -> str:
            text = " ".join(screen_text(app).split())
            return (
                text
                if "driverInstallDir does not move it), or use a" in text and "pre-installed host driver" in text
                else ""
            )

        # the scroll is animated: under load it ends later than a fixed pause (a fresh-clone run beside a CPU hog)
        await wait_for(pilot, scrolled, 10, "the fix scrolled into view")
        text = scrolled()
        assert "gpu-a10-01 ✓ writable, exec ✗ noexec /run" in text, text  # the per-node table shows too
