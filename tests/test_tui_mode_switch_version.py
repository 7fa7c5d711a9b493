"""A precompiled branch does not ride along into upstream mode (issue 35's walk, eks-ubuntu-mirror).

A newcomer looked at Precompiled (the Driver step preselected the branch ``580`` the registry holds a precompiled tag
of), went back and took the suggested Upstream: the Driver step kept ``580``, an upstream image ``580-ubuntu22.04``
that no registry holds ("missing in target and in source"), while the Catalog listed the registry's full versions.
A bare branch names no upstream image: switching to upstream clears it, and the Driver step preselects a version the
registry holds, as for a newcomer who came straight to Upstream.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.tui import back_to, demo_app, next_to, walk_to
from tests.snapshots.plugin import wait_for


def _settled(app: object) -> bool:
    return not any(worker.is_running for worker in app.workers)  # type: ignore[attr-defined]


async def test_upstream_after_precompiled_takes_a_version_the_registry_holds(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-precompiled")
        await pilot.pause(0.3)
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: app.state.get("driver.version") == "580", 60, "the precompiled branch")
        await back_to(pilot, "mode")
        await pilot.click("#mode-upstream")
        await pilot.pause(0.3)
        assert app.state.get("mode") == "upstream"
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: _settled(app) and bool(app.state.get("driver.version")), 60, "the version")
        version = str(app.state.get("driver.version"))
        assert version in app.state.registry_versions, (version, app.state.registry_versions)
