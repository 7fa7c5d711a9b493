"""GeForce/TITAN nodes kept out of the driver rollout (issue 35 item 4, defect 5).

The licence finding offers ``driver.excludeNodes``; the apply labels those nodes ``nvidia.com/gpu.deploy.driver=false``
(the operator keeps an admin's non-empty deploy label and its driver DaemonSets select ``true``), shows the write in
its diff, keeps each node's value before in the backup, and a rollback puts it back. No host fix is offered for a
node the driver never reaches. Cluster parts run against the demo cluster over real HTTPS.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from tests.helpers.cluster import connected, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main
from wizard.cluster.applying.backup import Backup, read_backup, render_backup
from wizard.cluster.facade import Cluster, ClusterError
from wizard.engine.facts import LABEL_DEPLOY_DRIVER
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings
from wizard.engine.modes import Mode
from wizard.engine.plan import Plan
from wizard.engine.render import render

GEFORCE = "NVIDIA-GeForce-RTX-4090"


def _plan(*excluded: str) -> Plan:
    return Plan.model_validate(
        {
            "mode": "upstream",
            "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia", "excludeNodes": list(excluded)},
        }
    )


def _geforce_scenario():  # type: ignore[no-untyped-def]
    """mixed-trouble with a GeForce card in gpu-l40s-1, the node nouveau holds."""
    loaded = scenario("mixed-trouble")
    loaded.nodes = [
        dataclasses.replace(spec, gpu_product=GEFORCE) if spec.name == "gpu-l40s-1" else spec for spec in loaded.nodes
    ]
    return loaded


async def _label(cluster: Cluster, node: str) -> str | None:
    found = await cluster.gateway.read_node(node)
    assert found is not None
    return (found["metadata"].get("labels") or {}).get(LABEL_DEPLOY_DRIVER)


async def test_the_licence_finding_offers_the_exclusion_and_the_apply_labels_backs_up_and_rolls_back(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster(_geforce_scenario(), step_delay=0.0)
    async with connected(demo) as cluster:
        facts = await cluster.discover()
        advice = {a.code: a for a in render(_plan(), facts).advice}
        assert "driver.excludeNodes: [gpu-l40s-1]" in advice["geforce-licence"].message
        assert f"{LABEL_DEPLOY_DRIVER}=false" in advice["geforce-licence"].message

        rendered = render(_plan("gpu-l40s-1"), facts)
        codes = {a.code for a in rendered.advice}
        assert "geforce-licence" not in codes and "consumer-excluded" in codes
        before = await _label(cluster, "gpu-l40s-1")
        prepared = await cluster.prepare_apply(rendered)
        assert prepared.ok, prepared.errors
        assert prepared.node_labels == {"gpu-l40s-1": before}
        assert "+++ planned/Node/gpu-l40s-1" in prepared.diff and f'+  {LABEL_DEPLOY_DRIVER}: "false"' in prepared.diff

        result = await cluster.apply(prepared, backup_dir=tmp_path)
        assert result.ok and "labelled nvidia.com/gpu.deploy.driver=false on gpu-l40s-1" in result.message
        assert await _label(cluster, "gpu-l40s-1") == "false"
        assert read_backup(result.backup_path).node_labels == {"gpu-l40s-1": before}
        await asyncio.sleep(0.5)  # the simulated operator's label pass keeps an admin's non-empty value
        assert await _label(cluster, "gpu-l40s-1") == "false"

        lines = await cluster.rollback(result.backup_path)
        assert any(line.startswith("restored Node/gpu-l40s-1 label") for line in lines)
        assert await _label(cluster, "gpu-l40s-1") != "false"


async def test_an_excluded_node_that_is_not_in_the_cluster_is_an_error(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("mixed-trouble", step_delay=0.0)
    async with connected(demo) as cluster:
        prepared = await cluster.prepare_apply(render(_plan("gpu-gone"), await cluster.discover()))
        assert "driver.excludeNodes: node gpu-gone is not in the cluster" in prepared.errors
        with pytest.raises(ClusterError, match="nothing applied"):
            await cluster.apply(prepared, backup_dir="/nonexistent")


def test_no_host_fix_is_offered_for_an_excluded_node() -> None:
    state = HostState(node="rtx-1", os_id="ubuntu", kernel="5.15.0-1063-nvidia", nouveau=True, secure_boot=True)
    assert {c.check for c in host_findings(DoctorTarget(Mode.UPSTREAM), state)} >= {"nouveau-loaded"}
    target = DoctorTarget.from_plan(_plan("rtx-1"))
    assert target.excluded == {"rtx-1"} and host_findings(target, state) == []


def test_an_excluded_node_without_a_host_driver_would_hold_the_policy_not_ready() -> None:
    """Kept out of the driver rollout, the node still runs the toolkit, device plugin and validator, whose driver
    validation waits for the operator's driver there: with no working host driver the ClusterPolicy never reads
    ready. Found before apply, with a fix that works; a host driver (or an unanswered nvidia-smi) says nothing."""
    target = DoctorTarget.from_plan(_plan("rtx-1"))
    bare = HostState(node="rtx-1", os_id="ubuntu", kernel="5.15.0-1063-nvidia", host_smi_detail="not installed")
    [found] = host_findings(target, bare)
    assert (found.check, found.status.name, found.node) == ("excluded-no-host-driver", "FAIL", "rtx-1")
    assert "never reads ready" in found.message and "nvidia-smi: not installed" in found.message
    assert "kubectl label node rtx-1 nvidia.com/gpu.deploy.operands=false" in found.hint
    assert host_findings(target, dataclasses.replace(bare, host_driver="580.126.20", host_smi_detail="")) == []
    assert host_findings(target, dataclasses.replace(bare, host_smi_detail="")) == []  # not answered: no claim
    assert host_findings(target, dataclasses.replace(bare, error="pod never started")) == []


def test_a_backup_keeps_the_node_labels_and_refuses_a_forged_one(tmp_path: Path) -> None:
    path = tmp_path / "b.yaml"
    path.write_text(render_backup(Backup("ctx", "https://x", [], node_labels={"rtx-1": "true", "rtx-2": None})))
    assert read_backup(path).node_labels == {"rtx-1": "true", "rtx-2": None}
    path.write_text(render_backup(Backup("ctx", "https://x", [], node_labels={"Bad Node": "true"})))
    with pytest.raises(ClusterError, match="not a DNS subdomain name"):
        read_backup(path)


def test_apply_dry_run_does_not_stop_on_an_excluded_nodes_host_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    demo = demo_cluster(_geforce_scenario(), step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580'\n  repository: nvcr.io/nvidia\n"
        "  excludeNodes: [gpu-l40s-1]\n"
    )
    code = main(["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--dry-run"])
    _out, err = capsys.readouterr()
    assert "nouveau-loaded" not in err
    assert "driver-dir on 1 node (gpu-l40s-2)" in err  # the other nodes' findings still stop it
    assert code == 1


def test_the_cli_dry_run_and_the_tui_confirmation_name_the_label_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    from screens.apply_text import changes

    demo = demo_cluster("sle-micro-precompiled", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
        "  excludeNodes: [gpu-h200-01]\n"
    )
    code = main(
        ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--dry-run", "--no-host-check"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "+++ planned/Node/gpu-h200-01" in out
    assert "Node/gpu-h200-01: label nvidia.com/gpu.deploy.driver" in err and "-> false" in err

    async def prepare() -> list[str]:
        async with connected(demo) as cluster:
            plan = Plan.model_validate(
                {
                    "mode": "precompiled",
                    "driver": {
                        "version": "580.126.09.1",
                        "repository": "registry.example.com/mlops",
                        "excludeNodes": ["gpu-h200-01"],
                    },
                }
            )
            return changes(await cluster.prepare_apply(render(plan, await cluster.discover())))

    assert asyncio.run(prepare()) == [
        "create ClusterPolicy/cluster-policy",
        "label Node/gpu-h200-01 nvidia.com/gpu.deploy.driver=false",
    ]


async def test_nodes_offers_to_keep_the_geforce_node_out_and_drops_its_host_fix(tui_env: Path, tmp_path: Path) -> None:
    """Defect 5 in the TUI: the licence finding had no action and nouveau's fix named the GeForce node. Kept out, the
    node (no host driver) gets the finding that its other operands would wait forever instead."""
    from ruamel.yaml import YAML

    from tests.helpers.tui import demo_app, walk_to
    from tests.snapshots.plugin import screen_text, wait_for
    from wizard.bundled import asset_text

    yaml = YAML(typ="safe")
    data = yaml.load(asset_text("scenarios", "mixed-trouble.yaml"))
    for node in data["nodes"]:
        if node["name"] == "gpu-l40s-1":
            node["gpu_product"] = GEFORCE
    path = tmp_path / "geforce.yaml"
    with path.open("w") as out:
        yaml.dump(data, out)
    app = demo_app(tui_env, str(path))
    async with app.run_test(size=(80, 24)) as pilot:
        await walk_to(pilot, "nodes")
        await wait_for(pilot, lambda: bool(app.state.host_checked), 60, "the host check")
        await pilot.pause(0.3)
        assert "nouveau-loaded on 1 node (gpu-l40s-1)" in screen_text(app)
        tick = app.screen.query_one("#exclude-consumer")
        assert tick.display and "keep gpu-l40s-1 (GeForce/TITAN) out of the driver rollout" in screen_text(app)
        await pilot.click("#exclude-consumer")
        await pilot.pause(0.3)
        assert app.state.get("driver.excludeNodes") == ["gpu-l40s-1"]
        text = screen_text(app)
        assert "nouveau-loaded" not in text and "2 blocking host problems" in text, text  # and Secure Boot's
        # kept out, with no host driver: its other operands would wait for one forever (a fix that works is named)
        assert "excluded-no-host-driver on 1 node (gpu-l40s-1)" in text, text
        await pilot.click("#exclude-consumer")  # untick: the node is in the rollout again, with its fix
        await pilot.pause(0.3)
        assert app.state.get("driver.excludeNodes") == [] and "nouveau-loaded" in screen_text(app)


def test_apply_then_verify_passes_with_the_node_kept_out_and_no_driver_pod_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """The GeForce node runs its own (GeForce) driver on the host, which its other operands use."""
    loaded = scenario("sle-micro-precompiled")
    loaded.nodes = [
        dataclasses.replace(spec, count=1, name="gpu-h200-01", gpu_product=GEFORCE, host_driver="580.126.20")
        if spec.name == "gpu-h200"
        else spec
        for spec in loaded.nodes
    ] + [dataclasses.replace(spec, count=1, name="gpu-h200-02") for spec in loaded.nodes if spec.name == "gpu-h200"]
    demo = demo_cluster(loaded, step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
        "  excludeNodes: [gpu-h200-01]\n"
    )
    kubeconfig = str(demo.kubeconfig_path)
    flags = ["--answers", str(answers), "--kubeconfig", kubeconfig]
    code = main(["apply", *flags, "--yes", "--no-host-check", "--backup-dir", str(tmp_path / "b")])
    out, err = capsys.readouterr()
    assert code == 0, err
    code = main(["verify", *flags])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "kept out of the driver rollout as planned" in out + err
