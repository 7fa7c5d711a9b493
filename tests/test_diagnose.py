"""Diagnosis after a failure on the demo cluster: ``verify`` explains each failing node with the
matching log line and the fix; the ``Cluster.diagnose`` facade groups nodes that fail alike.

The scenarios: ``kernel-drift`` (bundled: precompiled, one node's kernel updated, no image for it)
and a host-refusals cluster built here from it (upstream driver; Secure Boot, nouveau, no kernel
headers and no package repository on different nodes).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.cluster import collect, connected
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.bundled import asset_text
from wizard.demo.scenarios.scenario import load_scenario
from wizard.engine.results import Status

NODE = (
    "{os_id: ubuntu, os_version: '22.04', kernel: 5.15.0-1048-nvidia, gpu_product: NVIDIA-H100-80GB-HBM3, gpu_count: 8"
)


def host_refusals(folder: Path, secure_boot_nodes: int = 1) -> Path:
    """The kernel-drift cluster turned upstream, its GPU nodes each refusing the driver for another reason."""
    text = asset_text("scenarios", "kernel-drift.yaml").split("\nnodes:\n", 1)[0]
    text = text.replace("name: kernel-drift", "name: host-refusals").replace(
        "usePrecompiled: true", "usePrecompiled: false"
    )
    text = text.replace('version: "580"', "version: 580.126.20")
    count = f", count: {secure_boot_nodes}" if secure_boot_nodes > 1 else ""
    path = folder / "host-refusals.yaml"
    path.write_text(
        text
        + "\nnodes:\n"
        + f"  - {{name: gpu-hd, {NODE[1:]}, kernel_headers: false, package_repo: false}}\n"
        + f"  - {{name: gpu-nv, {NODE[1:]}, nouveau: true}}\n"
        + f"  - {{name: gpu-sb, {NODE[1:]}, secure_boot: true{count}}}\n"
        + "registry:\n  catalog:\n    nvcr.io/nvidia/driver:\n"
        + "      580.126.20-ubuntu22.04: sha256:5dc7d887c68354d34b2c75213f027707da5c245f297d1f38465f2c10228ccdc9\n"
    )
    return path


def diagnosis_block(out: str) -> str:
    assert "\ndiagnosis (" in out, out
    return out.split("\ndiagnosis (", 1)[1]


def test_verify_explains_kernel_drift_with_the_pull_error_and_check_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "verify", "--demo", "kernel-drift", "--no-registry")
    assert code == 1, err
    block = diagnosis_block(out)
    assert "✗ diagnosis gpu-h100-03: driver pod nvidia-driver-daemonset-5.15.0-1063-nvidia-ubuntu22.04-" in block
    assert "no precompiled driver image for the node's kernel (kernel drift) (NVIDIA/gpu-operator#1220)" in block
    assert "fix: Run `gpu-wizard check-kernel 5.15.0-1063-nvidia`" in block
    assert (
        '| nvidia-driver-ctr waiting | Back-off pulling image "nvcr.io/nvidia/driver:580-5.15.0-1063-nvidia-ubuntu22.04"'
        in block
    )
    assert (
        '| event Failed | Failed to pull image "nvcr.io/nvidia/driver:580-5.15.0-1063' in block
    )  # the kubelet's event
    assert "gpu-h100-01" not in block and "gpu-h100-02" not in block  # verified fine: not diagnosed


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
def test_verify_explains_each_host_refusal_with_its_log_line_and_fix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "verify", "--demo", str(host_refusals(tmp_path)), "--no-registry", "-o", "json")
    assert code == 1, err
    report = json.loads(out)
    found = {c["node"]: c for c in report["diagnosis"] if c["check"] == "diagnosis"}
    expected = {
        "gpu-hd": (
            "kernel-headers-unavailable",
            "Could not resolve Linux kernel version",
            "driver.repoConfig.configMapName",
        ),
        "gpu-nv": ("nouveau-loaded", "The Nouveau kernel driver is currently in use", "blacklist nouveau"),
        "gpu-sb": ("secure-boot-unsigned-module", "Key was rejected by service", "driver.usePrecompiled: true"),
    }
    for node, (signature, line, fix) in expected.items():
        finding = found[node]["data"]["findings"][0]
        assert finding["id"] == signature and fix in finding["fix"], node
        assert any(line in shown for shown in finding["lines"]), (node, finding["lines"])
    assert found["gpu-sb"]["data"]["validator"].endswith("running (not done) in driver-validation")  # waits on it
    failed_pod = next(c for c in report["checks"] if c["check"] == "driver-pod" and c["node"] == "gpu-sb")
    assert failed_pod["diagnosis"][0]["findings"][0]["id"] == "secure-boot-unsigned-module"  # beside the failed check
    summary = next(c for c in report["diagnosis"] if c["check"] == "diagnosis-summary")
    assert summary["data"] == {"failing": 3, "groups": 1, "read": 3, "matched": 3}


def test_no_diagnosis_flag_and_a_passing_verify_read_no_logs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "verify", "--demo", "kernel-drift", "--no-registry", "--no-diagnosis")
    assert code == 1 and "diagnosis" not in out


async def test_diagnose_groups_nodes_failing_alike_and_reads_a_few(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster(load_scenario(str(host_refusals(tmp_path, secure_boot_nodes=6))))
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        for _ in range(100):  # until every driver pod crashed once
            checks = [c async for c in cluster.diagnose(plan)]
            summary = checks[-1]
            if summary.data.get("failing") == 8 and summary.data.get("matched") == 3:
                break
            await asyncio.sleep(0.1)
        assert summary.check == "diagnosis-summary" and summary.status is Status.FAIL
        assert summary.data == {"failing": 8, "groups": 1, "read": 3, "matched": 3}, summary
        rest = checks[-2]
        assert rest.node == "" and rest.data["nodes"] == [f"gpu-sb-{i:02d}" for i in range(2, 7)]
        assert "5 more nodes" in rest.message and "probably fail the same way" in rest.message
        only = [c async for c in cluster.diagnose(plan, nodes=["gpu-sb-04"])]
        assert [c.node for c in only] == ["gpu-sb-04", ""]
        assert only[0].data["findings"][0]["id"] == "secure-boot-unsigned-module"
        pod = str(only[0].data["pod"])
        events = await cluster.gateway.list_events("gpu-operator", field_selector=f"involvedObject.name={pod}")
        assert [(e["reason"], e["involvedObject"]["fieldPath"]) for e in events] == [
            ("BackOff", "spec.containers{nvidia-driver-ctr}")
        ]
        assert events[0]["message"].startswith(f"Back-off restarting failed container nvidia-driver-ctr in pod {pod}_")


def drifted(folder: Path, name: str, policy: dict[str, str], node_extra: str) -> Path:
    """The kernel-drift cluster with ClusterPolicy text replaced (``policy``) and one GPU node on the published kernel."""
    text = (
        asset_text("scenarios", "kernel-drift.yaml")
        .split("\nnodes:\n", 1)[0]
        .replace("name: kernel-drift", f"name: {name}")
    )
    for old, new in policy.items():
        assert old in text, old
        text = text.replace(old, new)
    path = folder / f"{name}.yaml"
    path.write_text(
        text
        + f"\nnodes:\n  - {{name: gpu-x, {NODE[1:]}{node_extra}}}\n"
        + "registry:\n  catalog:\n    nvcr.io/nvidia/driver:\n"
        + "      580-5.15.0-1048-nvidia-ubuntu22.04: sha256:6589ac4d3fefdebf75d5dca47f3c278335cd9236f9ea356c9a83e721bffefaec\n"
    )
    return path


async def test_preinstalled_without_a_host_driver_is_explained_from_the_validator(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    policy = {"      driver:\n        enabled: true": "      driver:\n        enabled: false"}
    demo = demo_cluster(load_scenario(str(drifted(tmp_path, "no-host-driver", policy, ""))))
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        for _ in range(100):  # until the validator's driver-validation failed once
            found = [c async for c in cluster.diagnose(plan) if c.check == "diagnosis"]
            if found and found[0].data.get("matched"):
                break
            await asyncio.sleep(0.1)
    assert found[0].node == "gpu-x" and found[0].data["kind"] == "validator"
    finding = found[0].data["findings"][0]
    assert finding["id"] == "preinstalled-driver-not-found" and finding["issue"] == "NVIDIA/gpu-operator#2596"
    assert any("No pre-installed driver detected on the host" in line for line in finding["lines"])


async def test_a_crash_looping_toolkit_is_the_story_not_the_validator_waiting_for_it(
    demo_cluster: ClusterFactory,
) -> None:
    """k3s-suse-helm: on the SUSE Linux Micro node the toolkit cannot create its installDir on the read-only root and
    crash-loops; the validator waits in toolkit-validation. The diagnosis reads the toolkit's own log (before: only
    the validator's, which says nothing of why) and names the fix; the healthy SLES node has nothing to explain."""
    demo = demo_cluster("k3s-suse-helm")
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        for _ in range(100):  # until the toolkit has crashed once
            found = [c async for c in cluster.diagnose(plan) if c.check == "diagnosis"]
            if found and found[0].data.get("matched"):
                break
            await asyncio.sleep(0.1)
    [check] = found
    assert (check.node, check.data["kind"]) == ("gpu-h100-slmicro", "toolkit"), check
    assert check.data["pod"].startswith("nvidia-container-toolkit-daemonset-"), check.data
    assert "toolkit-validation" in check.data["validator"], check.data  # the validator's wait, a note
    finding = check.data["findings"][0]
    assert finding["id"] == "toolkit-installdir-read-only", check.data["findings"]
    assert any("mkdir /usr/local/nvidia: read-only file system" in line for line in finding["lines"]), finding
    assert "/run/nvidia/toolkit-install" in check.hint


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
def test_an_unknown_failure_still_shows_its_last_log_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wizard.engine import failures

    known = failures.signatures()  # a catalog that does not know this failure (the real one now does)
    monkeypatch.setattr(failures, "signatures", lambda: tuple(s for s in known if s.id != "noexec-host-folder"))
    scenario = drifted(tmp_path, "noexec", {}, ", noexec_mounts: [/run]")
    code, out, err = run(capsys, "verify", "--demo", str(scenario), "--no-registry")
    assert code == 1, err
    block = diagnosis_block(out)
    assert "gpu-x: validator pod nvidia-operator-validator-" in block
    assert "no known failure signature matched; its last log lines follow" in block
    assert "| driver-validation | " in block and "permission denied: exit status 126" in block
    assert "hint: read the whole log: kubectl logs -n gpu-operator nvidia-operator-validator-" in block


@pytest.mark.parametrize(
    ("host", "precompiled", "repo_config", "refusal"),
    [
        ({"kernel_headers": False, "package_repo": False}, False, False, "kernel-headers"),
        ({"kernel_headers": False, "package_repo": False}, False, True, ""),  # driver.repoConfig: a mirror
        ({"kernel_headers": False, "package_repo": False}, True, False, ""),  # precompiled needs no headers
        ({"kernel_headers": False}, False, False, ""),  # the repositories still answer
        ({"secure_boot": True}, False, False, "secure-boot"),
        ({"secure_boot": True}, True, False, ""),  # precompiled modules are signed
        ({"nouveau": True}, True, False, "nouveau"),
        ({"nouveau": True, "secure_boot": True}, False, False, "nouveau"),  # the installer stops first
    ],
)
def test_the_demo_host_refuses_the_driver_container_like_a_real_node(
    host: dict[str, bool], precompiled: bool, repo_config: bool, refusal: str
) -> None:
    from wizard.demo.scenarios.scenario import NodeSpec
    from wizard.demo.sim.workloads import driver_refusal
    from wizard.demo.sim.world import NodeView

    spec = NodeSpec("gpu-1", "ubuntu", "22.04", "Ubuntu 22.04.5 LTS", "5.15.0-1048-nvidia", **host)  # type: ignore[arg-type]
    env = [{"name": "PRECOMPILED", "value": "true"}] if precompiled else []
    volumes = [{"name": "repo-config", "configMap": {"name": "repo-config"}}] if repo_config else []
    pod = {"spec": {"containers": [{"name": "nvidia-driver-ctr", "env": env}], "volumes": volumes}}
    assert driver_refusal(pod, NodeView(spec=spec, labels={})) == refusal


def test_apply_whose_rollout_fails_explains_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = asset_text("scenarios", "ubuntu-upstream.yaml").replace("name: ubuntu-upstream", "name: sb")
    (tmp_path / "sb.yaml").write_text(
        scenario.replace("    gpu_count: 8\n", "    gpu_count: 8\n    secure_boot: true\n")
    )
    answers = tmp_path / "upstream.yaml"
    answers.write_text("version: 1\nmode: upstream\ndriver:\n  version: '580.126.20'\n  repository: nvcr.io/nvidia\n")
    argv = ["apply", "--demo", str(tmp_path / "sb.yaml"), "--answers", str(answers), "--yes", "--no-registry"]
    argv.append("--allow-host-findings")  # the host check names Secure Boot first; applied anyway, the rollout fails
    code, _, err = run(capsys, *argv, "--crash-window", "1", "--backup-dir", str(tmp_path))
    assert code == 1
    assert "secure-boot-unsigned on 3 nodes" in err and "going on (--allow-host-findings)" in err  # every GPU node
    block = err.split("\ndiagnosis (", 1)[1]
    assert "Secure Boot refused the unsigned NVIDIA kernel module (NVIDIA/gpu-operator#1726)" in block
    assert "| nvidia-driver-ctr | Kernel module load error: Key was rejected by service" in block


async def test_an_unpullable_driver_manager_is_blamed_not_the_driver_image(
    demo_cluster: ClusterFactory, kubectl: Kubectl
) -> None:
    """Behind Harbor (``rke2-rhel-harbor``), a ClusterPolicy leaving the driver manager at nvcr.io: the driver pod's
    init container cannot pull its image; the diagnosis names that image, not the driver's (issue #418's), as the
    real-cluster lane found (the driver container never got to pull anything)."""
    from wizard.engine.facts import facts_from_nodelist
    from wizard.engine.plan import Plan
    from wizard.engine.render import render

    demo = demo_cluster("rke2-rhel-harbor")
    nodes = json.loads(kubectl(demo, "get", "nodes", "-o", "json").stdout)
    answers = {
        "mode": "upstream",
        "operator": {"version": "v26.7.0"},
        "driver": {"version": "580.126.20", "repository": "harbor.corp.example/nvidia"},
    }
    policy = render(Plan.model_validate(answers), facts_from_nodelist(nodes)).cluster_policy
    done = kubectl(demo, "apply", "-f", "-", input=json.dumps(policy))
    assert done.returncode == 0, done.stderr
    async with connected(demo) as cluster:
        plan = await cluster.live_plan()
        driver: list[dict[str, Any]] = []
        for _ in range(150):  # until a driver pod's init container backs off its pull
            checks = [c async for c in cluster.diagnose(plan)]
            driver = [c.data for c in checks if c.check == "diagnosis" and c.data.get("kind") == "driver"]
            if driver and all(d.get("matched") for d in driver):
                break
            await asyncio.sleep(0.1)
        assert driver and all(d.get("matched") for d in driver), checks
        for data in driver:
            ids = [f["id"] for f in data["findings"]]
            assert ids[0] == "driver-manager-image-missing" and "driver-image-missing" not in ids, ids
            assert any("/k8s-driver-manager:" in line for line in data["lines"]), data["lines"]
        # verify's driver-pod line names the init container that fails, not only the driver container's wait
        checks, _ = await collect(cluster.verify(plan, no_registry="not asked here"))
        pods = [c for c in checks if c.check == "driver-pod"]
        assert pods and all(
            "(init container k8s-driver-manager: ImagePullBackOff: Back-off pulling image" in c.message for c in pods
        ), [c.message for c in pods]
