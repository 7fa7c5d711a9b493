"""The host probe (``run_on_hosts``) through one DaemonSet, against the demo cluster over real HTTPS.

Results per node from the pods' termination messages, a pod that cannot start, the DaemonSet gone
after success, failure and cancellation, an output too long for the 4096-byte message cut and said
so, and the API writes a run makes (constant in the node count).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import Counter
from typing import Any

import pytest

from tests.helpers.cli import run_cli as _cli
from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.facade import Cluster
from wizard.cluster.probes.hostprobe import HostRun, host_findmnt, probe_budget, run_on_hosts
from wizard.cluster.probes.probe import Leftover, probe_pod
from wizard.cluster.probes.probeset import OWNER_SELECTOR, anchor_job, caps, daemonset, read_message, script
from wizard.engine.nodescript import Step

NS = "gpu-operator"
IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"
STEPS = [
    Step("hostname", ("cat", "/etc/hostname"), host=True),
    Step("usr", ("test", "-d", "/usr"), host=True),
    Step("missing", ("test", "-d", "/no/such"), host=True),
    Step("mount", host_findmnt("/usr/local"), host=True),
    Step("write", ("touch", "/host/tmp/probe-was-here")),
]


async def gpu_nodes(cluster: Cluster) -> list[str]:
    return sorted(n.name for n in (await cluster.discover()).gpu_nodes)


async def leftovers(cluster: Cluster) -> tuple[list[str], list[str]]:
    sets = await cluster.gateway.list_everywhere("daemonsets", label_selector=OWNER_SELECTOR)
    sets += await cluster.gateway.list_everywhere("jobs", label_selector=OWNER_SELECTOR)
    pods = await cluster.gateway.list_everywhere("pods", label_selector=OWNER_SELECTOR)
    return [d["metadata"]["name"] for d in sets], [p["metadata"]["name"] for p in pods]


async def test_one_daemonset_answers_per_node_and_is_removed(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("noexec-run")
    requests: list[str] = []
    demo.cluster.faults.when = lambda r: requests.append(r.method) or False
    async with connected(demo) as cluster:
        nodes = await gpu_nodes(cluster)
        before = Counter(requests)
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, STEPS, namespace=NS, image=IMAGE)]
        made = Counter(requests) - before
        assert await leftovers(cluster) == ([], [])
    assert sorted(r.node for r in runs if isinstance(r, HostRun)) == nodes
    for run in runs:
        assert isinstance(run, HostRun) and run.ran, run
        got = run.by_check(STEPS)
        assert got["hostname"].output == run.node and got["hostname"].exit_code == 0
        assert (got["usr"].exit_code, got["missing"].exit_code) == (0, 1)
        # the host's own flags (the probe's read-only bind of / would show "ro")
        assert got["mount"].output.split()[0] == "/" and got["mount"].output.split()[1].startswith("rw")
        assert got["write"].exit_code != 0 and "Read-only file system" in got["write"].output
        assert run.truncated == []
    # writes: create + delete of the DaemonSet and of its deadline Job, whatever the node count
    assert made["POST"] == 2 and made["DELETE"] == 2 and not made["PUT"] and not made["PATCH"]


async def test_a_probe_pod_that_cannot_start_says_why(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("noexec-run")) as cluster:
        nodes = await gpu_nodes(cluster)
        image = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.0.0-missing"
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, STEPS, namespace=NS, image=image, timeout=20)]
        assert await leftovers(cluster) == ([], [])
    assert sorted(r.node for r in runs if isinstance(r, HostRun)) == nodes
    for run in runs:
        assert isinstance(run, HostRun) and not run.ran
        assert "cannot start" in run.error and ("ImagePullBackOff" in run.error or "ErrImagePull" in run.error)
        assert "--probe-image" in run.hint


async def test_a_node_without_a_pod_gets_an_error_at_the_deadline(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("noexec-run")) as cluster:
        nodes = await gpu_nodes(cluster)
        runs = [
            r
            async for r in run_on_hosts(
                cluster.gateway, [*nodes, "gpu-gone-99"], STEPS[:1], namespace=NS, image=IMAGE, timeout=1.0
            )
        ]
        assert await leftovers(cluster) == ([], [])
    by = {r.node: r for r in runs if isinstance(r, HostRun)}
    assert all(by[n].ran for n in nodes)
    assert "no probe result within" in by["gpu-gone-99"].error and "no probe pod was created" in by["gpu-gone-99"].error


async def test_closing_early_removes_the_daemonset(demo_cluster: ClusterFactory) -> None:
    async with connected(demo_cluster("noexec-run")) as cluster:
        nodes = await gpu_nodes(cluster)
        runs = run_on_hosts(cluster.gateway, nodes, STEPS, namespace=NS, image=IMAGE)
        async with contextlib.aclosing(runs):
            async for _first in runs:
                assert (await leftovers(cluster))[0]  # the DaemonSet is there while the run goes on
                break
        assert await leftovers(cluster) == ([], [])


async def test_too_long_output_is_cut_and_said_so(demo_cluster: ClusterFactory) -> None:
    many = [Step(f"os-{i}", ("cat", "/etc/os-release"), host=True) for i in range(30)]
    assert sum(caps(many)) < 4096
    async with connected(demo_cluster("noexec-run")) as cluster:
        nodes = await gpu_nodes(cluster)
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, many, namespace=NS, image=IMAGE)]
    for run in runs:
        assert isinstance(run, HostRun) and run.ran, run
        assert len(run.truncated) == 30 and run.truncated[0].startswith("os-0: ")
        assert all(r.exit_code == 0 and r.output for r in run.results)


def test_the_message_format_round_trips_and_a_cut_message_is_an_error() -> None:
    steps = [Step("a", ("true",)), Step("b", ("false",))]
    assert read_message('{"v":1,"r":[[0,3,"YWJj"],[1,0,""]]}', steps).results[0].output == "abc"
    cut = read_message('"r":[[0,3,"YWJj"],[1,0,""]]}', steps)
    assert cut.error.startswith("the probe's result is unreadable")
    short = read_message('{"v":1,"r":[[0,3,"YWJj"]]}', steps)
    assert short.error == "the probe answered 1 of 2 steps"
    text = script(steps)
    assert "/dev/termination-log" in text and "head -c" in text and "base64 -w 0" in text


async def test_a_daemonset_that_cannot_be_deleted_is_a_leftover(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("noexec-run")
    async with connected(demo) as cluster:
        nodes = await gpu_nodes(cluster)
        faults: Any = demo.cluster.faults
        faults.only, faults.methods, faults.error_code, faults.error_rate = ["/apis/apps"], ["DELETE"], 403, 1.0
        runs = [r async for r in run_on_hosts(cluster.gateway, nodes, STEPS[:1], namespace=NS, image=IMAGE)]
        faults.clear()
        left = [r for r in runs if isinstance(r, Leftover)]
        assert len(left) == 1 and left[0].kind == "daemonset"
        assert left[0].command.startswith(f"kubectl delete daemonset -n {NS} gpu-wizard-probe-")
        await cluster.gateway.delete_daemonset(NS, left[0].name)


def _leave_probes_behind(demo: DemoClusterThread, deadline_s: int = 600) -> tuple[str, str]:
    """What a killed run leaves: a deadline Job owning a probe DaemonSet (with its pods), and a single-node probe pod."""
    name = "gpu-wizard-probe-killed"
    job = demo.call(
        lambda: demo.store.create("jobs", anchor_job(name, NS, image=IMAGE, run_id="killed", deadline_s=deadline_s))
    )
    nodes = ["gpu-a10-01", "gpu-a10-02"]
    body = daemonset(name, NS, nodes, STEPS, image=IMAGE, run_id="killed", tolerations=[], sleep_s=600, owner=job)
    demo.call(lambda: demo.store.create("daemonsets", body))
    pod = probe_pod("gpu-a10-01", NS, IMAGE, run_id="killed-too")
    pod["metadata"]["name"] = "gpu-wizard-probe-single"
    demo.call(lambda: demo.store.create("pods", pod))
    if deadline_s > 5:
        demo.settle()
    return name, "gpu-wizard-probe-single"


def test_the_deadline_job_takes_the_daemonset_and_its_pods_with_it(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("noexec-run")
    name, _ = _leave_probes_behind(demo, deadline_s=2)

    def left(kind: str) -> list[str]:
        return [
            o["metadata"]["name"]
            for o in demo.call(lambda: demo.store.list(kind, NS))
            if "killed" in o["metadata"]["name"]
        ]

    assert left("daemonsets") == [name]  # the Job was created first (its uid is the owner reference)
    deadline = time.monotonic() + 10  # the Job fails at its deadline, its TTL (0) deletes it, the collector the rest
    while (left("jobs") or left("daemonsets") or left("pods")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left("jobs") == left("daemonsets") == left("pods") == []


def test_cleanup_removes_what_a_killed_run_left_and_a_repeat_finds_nothing(
    demo_cluster: ClusterFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("noexec-run")
    ds, single = _leave_probes_behind(demo)
    argv = ["cleanup", "--kubeconfig", str(demo.kubeconfig_path)]
    code, out, _ = _cli(capsys, *argv, "--dry-run")
    assert code == 0 and f"would remove job {NS}/{ds} (run killed)" in out
    assert f"would remove daemonset {NS}/{ds} (run killed)" in out
    assert f"would remove pod {NS}/{single} on gpu-a10-01 (run killed-too)" in out
    code, out, err = _cli(capsys, *argv)
    assert code == 0, err
    # the Job first: its DaemonSet (and that one's pods) go with it, unless listed before the collector got to them
    assert f"✓ removed job {NS}/{ds} (run killed)" in out and f"✓ removed pod {NS}/{single}" in out
    code, out, _ = _cli(capsys, *argv, "-o", "json")
    assert code == 0 and json.loads(out) == {"searched": "every namespace", "dry_run": False, "found": [], "failed": 0}
    code, out, _ = _cli(capsys, *argv)
    assert code == 0 and out == "nothing left: no gpu-wizard probe Job, DaemonSet or pod in every namespace\n"


def test_cleanup_that_cannot_remove_says_the_command_and_exits_1(
    demo_cluster: ClusterFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("noexec-run")
    ds, _ = _leave_probes_behind(demo)
    faults = demo.faults
    faults.only, faults.methods, faults.error_code, faults.error_rate = ["/apis/"], ["DELETE"], 403, 1.0
    try:
        code, out, _ = _cli(capsys, "cleanup", "--kubeconfig", str(demo.kubeconfig_path), "-o", "text")
    finally:
        faults.clear()
    assert code == 1
    assert f"✗ cannot remove daemonset {NS}/{ds}" in out and f"run: kubectl delete daemonset -n {NS} {ds}" in out
    assert f"run: kubectl delete job -n {NS} {ds}" in out and "2 could not be removed" in out
    code, _, err = _cli(capsys, "cleanup", "--kubeconfig", "/no/such/kubeconfig")
    assert code == 2 and "Traceback" not in err


def test_cleanup_without_cluster_wide_listing_looks_in_the_operator_namespace(
    demo_cluster: ClusterFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("noexec-run")
    _leave_probes_behind(demo)
    faults = demo.faults  # the user may not list across namespaces
    faults.only, faults.methods = ["/api/v1/pods", "/apis/apps/v1/daemonsets", "/apis/batch/v1/jobs"], ["GET"]
    faults.error_code, faults.error_rate = 403, 1.0
    try:
        code, out, _ = _cli(capsys, "cleanup", "--kubeconfig", str(demo.kubeconfig_path))
        assert code == 0 and f"probe objects in namespace {NS}" in out
        code, out, _ = _cli(capsys, "cleanup", "--kubeconfig", str(demo.kubeconfig_path))
        assert code == 0 and out == f"nothing left: no gpu-wizard probe Job, DaemonSet or pod in namespace {NS}\n"
    finally:
        faults.clear()


async def test_a_single_node_gets_one_probe_pod_with_the_same_results(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("noexec-run")
    requests: list[str] = []
    demo.cluster.faults.when = lambda r: requests.append(f"{r.method} {r.path}") or False
    async with connected(demo) as cluster:
        runs = [r async for r in run_on_hosts(cluster.gateway, ["gpu-a10-01"], STEPS, namespace=NS, image=IMAGE)]
        assert await leftovers(cluster) == ([], [])
    assert len(runs) == 1 and isinstance(runs[0], HostRun) and runs[0].ran
    got = runs[0].by_check(STEPS)
    assert got["hostname"].output == "gpu-a10-01" and got["mount"].output.split()[1].startswith("rw")
    assert "Read-only file system" in got["write"].output
    writes = [r for r in requests if r.startswith(("POST", "DELETE", "PUT", "PATCH")) and "accessreviews" not in r]
    assert [w.split()[0] for w in writes] == ["POST", "DELETE"] and all("/pods" in w for w in writes), writes


def test_a_runs_cut_steps_are_named_by_check_even_with_a_colon_in_the_name() -> None:
    run = HostRun("gpu-1", truncated=["modules: 96 of 923 bytes", "resolve:archive.ubuntu.com: 3 of 40 bytes"])
    assert run.cut() == {"modules": "96 of 923 bytes", "resolve:archive.ubuntu.com": "3 of 40 bytes"}
    assert HostRun("gpu-1").cut() == {}


def test_the_probe_budget_lets_a_default_daemonset_controller_reach_5000_nodes() -> None:
    """large (5,000 nodes) walked at 80x24 (issue 35): Verify said "no probe result within 130s: no probe pod was
    created on the node" for 1,500 nodes of a healthy cluster. kube-controller-manager's client sends at most 20
    requests a second by default (``--kube-api-qps``), one pod create each: the budget must let it create them all."""
    kcm_default_qps = 20.0
    for nodes in (1, 64, 5000):
        assert probe_budget(30.0, nodes) >= 30.0 + nodes / kcm_default_qps
