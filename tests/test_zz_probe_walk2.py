from pathlib import Path
from tests.helpers.tui import demo_app, next_to, walk_to, on_step
from tests.snapshots.plugin import screen_text, wait_for

async def test_show(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.click("#override")
        await next_to(pilot, "mode")
        await next_to(pilot, "driver")
        await pilot.pause(2)
        print(app.screen.blocker())
        await next_to(pilot, "paths")
        await wait_for(pilot, lambda: app.state.path_checks is not None, 30, "the path check")
        print(app.screen.blocker())
        if app.screen.blocker():
            await pilot.click("#override")
        await next_to(pilot, "preview")
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "the dry-run")
        await pilot.pause(1)
        print(screen_text(app))
        print(app.screen.blocker())
        from screens.findings import standing
        print("STANDING", standing(app.state))
        print("OVERRIDES", app.state.overrides)
