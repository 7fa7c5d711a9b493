"""The runtime flavour end to end on the demo: SLE Micro on RKE2 gets RKE2's toolkit env and verifies green;
an env that does not fit RKE2 makes the demo's toolkit fail the way the real one does, and verify says so."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import by_node, collect, connected, sle_plan, upstream_plan
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.install import install_and_roll_out
from tests.helpers.sim import NS, RKE2_TOOLKIT_ENV, SLE_POLICY, cluster_policy, pods_of, settle, waiting_reason, world
from wizard.cluster.verification.verify import live_paths
from wizard.demo.rules.runtime_layout import ToolkitHostPaths, layout, runtime_reads_drop_in, toolkit_error
from wizard.engine.plan import Plan
from wizard.engine.render import render
from wizard.engine.results import Status
from wizard.engine.runtime import flavour_env

RKE2_DIR = "/var/lib/rancher/rke2/agent/etc/containerd"
RKE2_DROP_IN = f"{RKE2_DIR}/config.toml.d/99-nvidia.toml"  # containerd 1.7.23-k3s2: config version 2
TOOLKIT = "/run/nvidia/toolkit-install/toolkit"


def with_env(env: dict[str, str]) -> Plan:
    answers = sle_plan().answers_dict()
    return Plan.model_validate({**answers, "toolkit": {**answers["toolkit"], "env": env}})


async def test_sle_micro_on_rke2_gets_rke2_settings_and_verifies_green(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    async with connected(demo) as cluster:
        rendered = render(sle_plan(), await cluster.discover())
        assert rendered.runtime is not None and rendered.runtime.flavour == "rke2"
        assert rendered.toolkit_env["CONTAINERD_SOCKET"] == "/run/k3s/containerd/containerd.sock"
        assert (await install_and_roll_out(cluster, sle_plan(), tmp_path)).startswith("ready")
        [policy] = await cluster.gateway.list_custom("nvidia.com", "v1", "clusterpolicies")
        checks, _ = await collect(cluster.verify(sle_plan()))
    assert live_paths(policy)[2] == RKE2_DROP_IN
    binary = by_node(checks, "containerd-config")  # grep BinaryName <RKE2's drop-in> on each host
    assert {c.message for c in binary.values()} == {f"BinaryName {TOOLKIT}/nvidia-container-runtime"}
    assert {c.status for c in binary.values()} == {Status.PASS}
    assert not [c.line() for c in checks if c.status is Status.FAIL]  # the digests SKIPPED: no registry given here


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
async def test_the_default_socket_on_rke2_fails_the_toolkit_and_verify_says_so(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    plan = with_env({})  # the answers say: no toolkit env (the operator's /run/containerd socket)
    async with connected(demo) as cluster:
        outcome = await install_and_roll_out(cluster, plan, tmp_path)
        checks, _ = await collect(cluster.verify(plan, timeout=5))
    assert outcome.startswith("failed:") and "(nvidia-container-toolkit-ctr) keeps failing" in outcome, outcome
    binary = by_node(checks, "containerd-config")["gpu-h200-01"]
    assert binary.status is Status.FAIL
    assert binary.message == "no BinaryName in /etc/containerd/conf.d/99-nvidia.toml"


async def test_a_drop_in_rke2_never_reads_leaves_containerd_without_the_nvidia_runtime(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    # the right socket, the operator's default drop-in: the toolkit succeeds, RKE2's containerd never reads
    # /etc/containerd/conf.d, and with installDir under /run RKE2 does not find the runtime by itself
    demo = demo_cluster("sle-micro-precompiled")
    plan = with_env({"CONTAINERD_SOCKET": "/run/k3s/containerd/containerd.sock"})
    async with connected(demo) as cluster:
        outcome = await install_and_roll_out(cluster, plan, tmp_path)
    assert outcome.startswith("failed:") and "(toolkit-validation) keeps failing" in outcome, outcome


# --- the demo's own rules, in process -------------------------------------------------------------


def _sle_with_env(env: list[dict[str, str]] | None) -> dict[str, Any]:
    policy = copy.deepcopy(SLE_POLICY)
    if env is None:
        policy["spec"]["toolkit"].pop("env", None)
    else:
        policy["spec"]["toolkit"]["env"] = env
    return policy


async def test_demo_toolkit_logs_the_real_dial_error_on_the_wrong_socket() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", _sle_with_env(None))
    await settle(sim)
    toolkit = pods_of(store, app="nvidia-container-toolkit-daemonset")["gpu-h200-01"]
    assert waiting_reason(toolkit, "nvidia-container-toolkit-ctr") == "CrashLoopBackOff"
    log = sim.logs(NS, toolkit["metadata"]["name"], "nvidia-container-toolkit-ctr")
    assert "Flushing config to /etc/containerd/conf.d/99-nvidia.toml" in log
    assert (
        'level=error msg="error running nvidia-toolkit: unable to setup runtime: unable to restart containerd: '
        'unable to dial: dial unix /runtime/sock-dir/containerd.sock: connect: no such file or directory"'
    ) in log
    ds = store.get("daemonsets", "nvidia-container-toolkit-daemonset", NS)
    volumes = {v["name"]: v["hostPath"]["path"] for v in ds["spec"]["template"]["spec"]["volumes"]}
    assert volumes["containerd-socket"] == "/run/containerd"  # the operator's default socket folder


async def test_demo_toolkit_with_rke2_env_writes_where_rke2_reads() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", _sle_with_env(RKE2_TOOLKIT_ENV))
    await settle(sim)
    ds = store.get("daemonsets", "nvidia-container-toolkit-daemonset", NS)
    [ctr] = ds["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in ctr["env"]}
    # the operator rewrites host paths to its mounts and reads a file config source through /host
    assert env["CONTAINERD_SOCKET"] == "/runtime/sock-dir/containerd.sock"
    assert env["RUNTIME_DROP_IN_CONFIG"] == "/runtime/config-dir.d/99-nvidia.toml"
    assert env["RUNTIME_DROP_IN_CONFIG_HOST_PATH"] == RKE2_DROP_IN
    assert env["RUNTIME_CONFIG_SOURCE"] == f"file=/host{RKE2_DIR}/config.toml"
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


async def test_demo_rke2_finds_the_toolkit_itself_under_usr_local_nvidia() -> None:
    # docs.rke2.io sets only CONTAINERD_SOCKET: k3s and RKE2 add the nvidia runtime when the toolkit is in /usr/local/nvidia
    sim, store = world("k3s-ubuntu")
    policy = cluster_policy(toolkit_dir="/usr/local/nvidia")
    policy["spec"]["toolkit"]["env"] = [{"name": "CONTAINERD_SOCKET", "value": "/run/k3s/containerd/containerd.sock"}]
    store.create("clusterpolicies", policy)
    await settle(sim)
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


async def test_k3s_with_containerd_2_installs_with_the_v3_drop_in_folder(
    demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("k3s-ubuntu")
    async with connected(demo) as cluster:
        rendered = render(upstream_plan(), await cluster.discover())
        assert rendered.runtime is not None and rendered.runtime.flavour == "k3s"
        assert rendered.runtime.drop_in == "/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/99-nvidia.toml"
        assert (await install_and_roll_out(cluster, upstream_plan(), tmp_path)).startswith("ready")


@pytest.mark.parametrize("flavour", ["containerd", "rke2", "k3s", "k0s", "microk8s"])
@pytest.mark.parametrize("runtime", ["containerd://1.7.23", "containerd://2.0.5"])
def test_the_engines_env_works_on_the_demos_distributions(flavour: str, runtime: str) -> None:
    """The engine's settings per flavour against the demo's own rules (written apart, from the distributions' docs)."""
    env = flavour_env(flavour, int(runtime.split("://")[1][0]))
    paths = ToolkitHostPaths(
        config=env.get("CONTAINERD_CONFIG", "/etc/containerd/config.toml"),
        drop_in=env.get("RUNTIME_DROP_IN_CONFIG", "/etc/containerd/conf.d/99-nvidia.toml"),
        socket=env.get("CONTAINERD_SOCKET", "/run/containerd/containerd.sock"),
    )
    where = layout(flavour, runtime)
    assert toolkit_error(where, paths) == ""
    assert runtime_reads_drop_in(where, paths)
    if flavour != "containerd":  # and the operator's defaults do not work there
        default = ToolkitHostPaths(
            "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml", "/run/containerd/containerd.sock"
        )
        assert toolkit_error(where, default) or not runtime_reads_drop_in(where, default)
