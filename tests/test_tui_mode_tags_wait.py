"""Next on Mode waits (a few seconds at most) for the pull registry's tags still being read (issue 35 walk).

The ★ follows what the registry holds (``tests/test_tui_mode_registry.py``), but the listing runs in a worker:
a newcomer who pressed Next on Mode before it ended went on with the recommendation made without it (Upstream
where the registry holds a precompiled tag for every group). Pilots at 80×24 on the demo cluster, the registry
held back by a gate in front of the app's ``open_registry`` (the demo registry itself answers at once).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from screens.steps import mode as mode_step
from tests.helpers.tui import demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def _hold_registry(app: Any) -> asyncio.Event:
    """Every registry opened by the app waits for the returned event first (a slow registry)."""
    gate = asyncio.Event()
    real = app.open_registry

    @contextlib.asynccontextmanager
    async def held(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        await gate.wait()
        async with real(*args, **kwargs) as registry:
            yield registry

    app.open_registry = held
    return gate


async def _to_mode_before_the_tags(pilot: Any, app: Any) -> None:
    await walk_to(pilot, "nodes")
    await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
    assert app.state.precompiled_tags is None
    await next_to(pilot, "mode")
    await pilot.pause()


async def test_next_while_the_tags_are_read_waits_for_them_and_takes_their_recommendation(tui_env: Path) -> None:
    """ubuntu-upstream's registry holds a precompiled tag for its one group: before, Next went to Driver with
    Upstream (the recommendation without the tags), and nothing said the ★ was still open."""
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        gate = _hold_registry(app)
        await _to_mode_before_the_tags(pilot, app)
        text = " ".join(screen_text(app).split())
        assert "reading the pull registry's tags" in text, text
        await pilot.press("ctrl+n")
        await pilot.pause(0.3)
        assert on_step(app, "mode"), "Next went on before the tags were read"
        gate.set()
        await wait_for(pilot, lambda: on_step(app, "driver"), 20, "the driver step after the tags")
        assert app.state.get("mode") == "precompiled"
        await pilot.pause(1.0)
        assert on_step(app, "driver"), "one Next moved more than one step"


async def test_a_registry_that_does_not_answer_holds_next_only_a_few_seconds(
    tui_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is bounded: then Next goes on with what is known (and the user is not stuck on Mode)."""
    monkeypatch.setattr(mode_step, "TAGS_WAIT_SECONDS", 0.5)
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        _hold_registry(app)
        await _to_mode_before_the_tags(pilot, app)
        chosen = app.state.get("mode")
        await pilot.press("ctrl+n")
        await pilot.pause(0.1)
        assert on_step(app, "mode")
        await wait_for(pilot, lambda: on_step(app, "driver"), 10, "the driver step after the bounded wait")
        assert app.state.get("mode") == chosen
        await pilot.pause(1.0)
        assert on_step(app, "driver"), "one Next moved more than one step"
