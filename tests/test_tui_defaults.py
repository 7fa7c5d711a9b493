"""Defaults follow what the cluster says (issue 16): the registry the operator runs from, several OSes,
an immutable OS in upstream mode, the versions an upstream registry holds, a typed version in the Catalog."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Select

from screens.steps.driver_catalog import upstream_versions
from tests.helpers.tui import demo_app, next_to, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for


def test_upstream_versions_are_full_versions_tagged_for_every_os() -> None:
    tags = ["580.126.20-ubuntu22.04", "580-5.15.0-1048-nvidia-ubuntu22.04", "570.195.03-ubuntu22.04", "latest"]
    assert upstream_versions(tags, ["ubuntu22.04"]) == ["580.126.20", "570.195.03"]
    assert upstream_versions([*tags, "580.126.20-rhel9.4"], ["ubuntu22.04", "rhel9.4"]) == ["580.126.20"]


async def test_airgapped_pulls_from_the_operator_s_registry_and_offers_its_tags(tui_env: Path) -> None:
    app = demo_app(tui_env, "airgapped")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        assert app.state.get("driver.repository") == "registry.airgap.local/nvidia"


async def test_ubuntu_upstream_lists_the_registry_versions_and_follows_a_typed_one(tui_env: Path) -> None:
    app = demo_app(tui_env, "ubuntu-upstream")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-upstream")  # the registry's precompiled tag gets the ★; upstream is chosen here
        await next_to(pilot, "driver")
        catalog = app.screen.query_one("#catalog", Select)
        await wait_for(pilot, lambda: catalog.display and len(catalog._options) > 1, 20, "the registry's versions")
        values = [v for _, v in catalog._options if v is not Select.NULL]
        assert values == ["595.91.07", "580.126.20", "570.195.03"]
        await set_field(pilot, "driver-version", "580.126.20")
        await pilot.pause()
        assert catalog.value == "580.126.20"
        await set_field(pilot, "driver-version", "580.1")
        await pilot.pause()
        assert catalog.value is Select.NULL


async def test_mixed_os_turns_the_nvidiadriver_crd_on(tui_env: Path) -> None:
    app = demo_app(tui_env, "mixed-os")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-upstream")  # the registry holds a precompiled tag for both OSes: ★ there
        await next_to(pilot, "driver")
        assert app.state.get("driver.useNvidiaDriverCRD") is True
        text = screen_text(app)  # the state shows in the glyph, not only in colour
        assert "▐X▌ useNvidiaDriverCRD" in text and "▐ ▌ airgapped" in text


async def test_upstream_on_sle_micro_is_warned_about(tui_env: Path) -> None:
    app = demo_app(tui_env, "sle-micro-precompiled")
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes", "mode")
        await pilot.click("#mode-upstream")
        await pilot.pause()
        assert "Upstream on sle-micro" in " ".join(screen_text(app).split())


async def test_answers_naming_no_operand_registry_take_the_live_policys(tui_env: Path) -> None:
    """Answers without operandRegistry over a live ClusterPolicy whose operands come from Harbor (the operator itself
    from nvcr.io): the plan does not own those repositories, which stay Harbor's, so Connect takes Harbor from the
    live policy (Preview then lists the images the cluster pulls, not nvcr.io's over "no changes")."""
    from ruamel.yaml import YAML

    from tests.helpers.sim import world
    from wizard.bundled import asset_text
    from wizard.engine.facts import facts_from_nodelist
    from wizard.engine.plan import Plan
    from wizard.engine.render import render

    answers = "version: 1\nmode: upstream\ndriver:\n  version: 580.126.20\n  repository: harbor.corp.example/nvidia\n"
    _, store = world("rke2-rhel-harbor")
    live = Plan.model_validate(
        {
            "mode": "upstream",
            "operator": {"version": "v26.7.0"},
            "driver": {
                "version": "580.126.20",
                "repository": "harbor.corp.example/nvidia",
                "operandRegistry": "harbor.corp.example",
            },
        }
    )
    policy = render(live, facts_from_nodelist({"items": store.list("nodes")})).cluster_policy
    yaml = YAML()
    scenario = yaml.load(asset_text("scenarios", "rke2-rhel-harbor.yaml"))
    scenario["name"] = "harbor-live-policy"
    scenario["operator"]["cluster_policy"] = policy
    del scenario["operator"]["repository"]  # the operator itself from nvcr.io: only the live policy names Harbor
    with (tui_env / "harbor-live-policy.yaml").open("w") as out:
        yaml.dump(scenario, out)
    (tui_env / "answers.yaml").write_text(answers)
    app = demo_app(tui_env, str(tui_env / "harbor-live-policy.yaml"), answers=tui_env / "answers.yaml")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.state.prepared is not None, 30, "Preview's dry-run")  # answers: replayed
        assert app.state.get("driver.operandRegistry") == "harbor.corp.example"
        policy = app.screen.tab_text("tab-policy")
        assert "harbor.corp.example/nvidia/k8s" in policy and "nvcr.io" not in policy, policy
