"""Mode's ★ follows what the pull registry holds, read before the Mode step (issue 35 item 2, defects 3 and 21).

Pilots at 80×24 against the demo cluster (its real HTTPS API and its registry): the Nodes step lists the pull
registry's driver tags in a worker of its own once the nodes are known; with a precompiled tag for every
(kernel, OS) group, Precompiled gets the ★ and its branch is the Catalog's choice; with Secure Boot on a node whose
kernel the registry lacks, the ★ is not on Precompiled and the Secure Boot fix names the missing tag.
``gpu-wizard answers init`` reads the same registry through the same rule and writes the same answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from pathlib import Path

from ruamel.yaml import YAML
from textual.widgets import Select, Static

from tests.helpers.tui import demo_app, next_to, on_step, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard.bundled import asset_text
from wizard.cli.main import main

HELD = "580-5.15.0-1063-nvidia-ubuntu22.04"
LACKED = "580-5.15.0-1048-nvidia-ubuntu22.04"


def _untagged_secure_boot(home: Path) -> str:
    """mixed-trouble's Secure Boot node on a second kernel the registry holds no precompiled tag of."""
    data = YAML(typ="safe").load(asset_text("scenarios", "mixed-trouble.yaml"))
    data["name"] = "secure-boot-untagged"
    for node in data["nodes"]:
        if node.get("secure_boot"):
            node["kernel"] = "5.15.0-1048-nvidia"
    path = home / "secure-boot-untagged.yaml"
    buffer = io.StringIO()
    YAML().dump(data, buffer)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return str(path)


def _init(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["answers", "init", *argv])
    return code, out.getvalue(), err.getvalue()


def _flat(app: object) -> str:
    return " ".join(screen_text(app).split())


async def _to_mode(pilot: object, app: object) -> None:
    """Nodes → Mode as a newcomer does, once the host check and the registry's listing are in."""
    state = app.state  # type: ignore[attr-defined]
    await walk_to(pilot, "nodes")
    await wait_for(pilot, lambda: bool(state.host_checked), 60, "the host check")
    await wait_for(pilot, lambda: state.precompiled_tags is not None, 30, "the registry's precompiled tags")
    if app.screen.blocker():  # type: ignore[attr-defined]
        await pilot.click("#override")  # type: ignore[attr-defined]
    await next_to(pilot, "mode")
    await pilot.pause()  # type: ignore[attr-defined]


async def test_a_tag_for_every_group_stars_precompiled_and_its_branch_is_the_catalog_s(tui_env: Path) -> None:
    """ubuntu-upstream's nvcr.io holds ``580-5.15.0-1048-nvidia-ubuntu22.04`` for its one group: before, Mode said
    "Upstream · suggested" (the tags were never read before Mode)."""
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode(pilot, app)
        assert app.state.precompiled_from == "nvcr.io/nvidia/driver"
        text = _flat(app)
        assert app.state.get("mode") == "precompiled", text
        assert "Precompiled ★ recommended" in text and "Upstream · suggested" not in text, text
        assert "the registry holds a precompiled image for every kernel and OS" in text, text
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: app.state.get("driver.version") == "580", 30, "the registry's branch")
        assert app.screen.query_one("#catalog", Select).value == "580"


async def test_secure_boot_with_the_signed_tuple_held_names_it_in_the_star_s_reason(tui_env: Path) -> None:
    """Defect 3 as reported: secure-boot-unsigned found, the registry holds ``580-5.15.0-1063-nvidia-ubuntu22.04``;
    the ★ is on Precompiled because the registry was read, and its reason says what it holds."""
    app = demo_app(tui_env, "mixed-trouble")
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode(pilot, app)
        text = _flat(app)
        assert app.state.get("mode") == "precompiled", text
        assert "Precompiled ★ recommended" in text and f"(the registry holds {HELD})" in text, text


async def test_secure_boot_on_a_kernel_the_registry_lacks_is_no_star_on_precompiled(tui_env: Path) -> None:
    """Secure Boot → precompiled only where the registry holds the Secure Boot node's tuple: here it lacks it, so
    neither mode gets the ★ and the Secure Boot fix says the exact tag to push, not "use mode: precompiled"."""
    app = demo_app(tui_env, _untagged_secure_boot(tui_env))
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await wait_for(pilot, lambda: app.state.precompiled_tags is not None, 30, "the registry's precompiled tags")
        await pilot.pause(0.3)
        nodes = _flat(app)
        assert "secure-boot-unsigned on 1 node (gpu-l40s-3)" in nodes, nodes
        shown = " ".join(str(app.screen.query_one("#host-findings", Static).content).split())  # scrolls at 80×24
        assert f"nvcr.io/nvidia/driver lacks {LACKED}: push or mirror that tag there" in shown, shown
        assert "→ use mode: precompiled" not in shown, shown  # the fix that could not work yet
        await pilot.click("#override")
        await next_to(pilot, "mode")
        await pilot.pause()
        text = _flat(app)
        assert app.state.get("mode") != "precompiled", text
        assert "★" not in text, text  # Upstream is only "suggested": it is not validated, and refused on gpu-l40s-3
        assert f"lacks {LACKED}" in text, text


async def test_answers_init_reads_the_same_registry_and_agrees_with_the_tui(tui_env: Path) -> None:
    """The CLI lists the pull registry's tags before choosing the mode, through the same engine rule: on both
    scenarios above its file holds the mode and version the TUI's Mode and Driver steps preselect."""
    code, out, err = await asyncio.to_thread(_init, "--demo", "ubuntu-upstream")
    assert code == 0, err
    written = YAML(typ="safe").load(out)
    assert written["mode"] == "precompiled" and str(written["driver"]["version"]) == "580", out
    assert "the registry holds a precompiled image for every kernel and OS" in out, out
    scenario = _untagged_secure_boot(tui_env)
    code, out, err = await asyncio.to_thread(_init, "--demo", scenario)
    assert code == 0, err
    written = YAML(typ="safe").load(out)
    assert written["mode"] == "upstream" and f"lacks {LACKED}" in out, out
    app = demo_app(tui_env, scenario)
    async with app.run_test(size=(80, 24)) as pilot:
        await _to_mode(pilot, app)
        assert app.state.get("mode") == written["mode"]
        await next_to(pilot, "driver")
        await wait_for(pilot, lambda: on_step(app, "driver") and bool(app.state.get("driver.version")), 30)
        assert str(app.state.get("driver.version")) == str(written["driver"]["version"])
