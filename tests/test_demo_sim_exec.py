"""Commands in simulated containers (``kubectl exec``) and their logs: nvidia-smi, host probes, findmnt, grep."""

from __future__ import annotations

import copy
import datetime as dt
import uuid

from tests.helpers.sim import (
    NS,
    SLE_KERNEL,
    SLE_POLICY,
    cluster_policy,
    pods_of,
    probe_pod,
    settle,
    status_of,
    waiting_reason,
    world,
)
from wizard.demo.sim import smi
from wizard.engine.nvsmi import parse_query_csv, parse_table


async def test_exec_nvidia_smi_in_the_driver_container_parses() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    pod = pods_of(store)["gpu-h200-02"]["metadata"]["name"]
    result = sim.exec(NS, pod, "nvidia-driver-ctr", ["nvidia-smi"])
    report = parse_table(result.stdout.decode(), result.exit_code)
    assert report.ok and report.header_style == "driver"
    assert (report.driver_version, report.gpu_count, report.gpus[0]) == ("580.126.09", 8, "NVIDIA H200")
    query = sim.exec(
        NS, pod, "nvidia-driver-ctr", ["nvidia-smi", "--query-gpu=driver_version,name,memory.total", "--format=csv"]
    )
    rows = parse_query_csv(query.stdout.decode())
    assert len(rows) == 8 and rows[0] == {
        "driver_version": "580.126.09",
        "name": "NVIDIA H200",
        "memory.total": "143771 MiB",
    }
    noheader = sim.exec(
        NS,
        pod,
        "nvidia-driver-ctr",
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
    )
    assert noheader.stdout.decode().splitlines()[0] == "580.126.09"
    uuids = sim.exec(NS, pod, "nvidia-driver-ctr", ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"])
    assert uuids.stdout.decode().startswith("GPU-")
    assert sim.exec(NS, pod, "nvidia-driver-ctr", ["uname", "-r"]).stdout == f"{SLE_KERNEL}\n".encode()
    os_release = sim.exec(NS, pod, "nvidia-driver-ctr", ["cat", "/host-etc/os-release"]).stdout.decode()
    assert 'ID="sle-micro"' in os_release and 'VERSION_ID="5.5"' in os_release
    # As on a real cluster, nvidia-driver-ctr does not mount the host's / (only the driver manager does).
    no_host = sim.exec(NS, pod, "nvidia-driver-ctr", ["chroot", "/host", "true"])
    assert no_host.exit_code == 125 and b"cannot change root directory to '/host'" in no_host.stderr
    bad = sim.exec(NS, pod, "nvidia-driver-ctr", ["kubectl", "version"])
    assert (bad.exit_code, bad.stderr) == (127, b"sh: kubectl: command not found\n")
    field = sim.exec(NS, pod, "nvidia-driver-ctr", ["nvidia-smi", "--query-gpu=bogus", "--format=csv"])
    assert field.exit_code == 2 and b'Field "bogus" is not a valid field' in field.stderr


async def test_nodes_without_a_working_driver_say_so() -> None:
    scenario = {
        "name": "broken",
        "nodes": [
            {
                "name": "gpu-01",
                "os_id": "ubuntu",
                "os_version": "22.04",
                "kernel": "5.15.0-1048-nvidia",
                "gpu_product": "NVIDIA-A10",
                "gpu_count": 1,
                "host_driver": "580.126.20",
                "host_driver_broken": True,
            },
            {
                "name": "gpu-02",
                "os_id": "ubuntu",
                "os_version": "22.04",
                "kernel": "5.15.0-1048-nvidia",
                "gpu_product": "NVIDIA-A10",
                "gpu_count": 1,
            },
            {
                "name": "gpu-03",
                "os_id": "ubuntu",
                "os_version": "22.04",
                "kernel": "5.15.0-1048-nvidia",
                "gpu_product": "NVIDIA-L40S",
                "gpu_count": 1,
                "host_driver": "610.57.04",
            },
        ],
    }
    sim, store = world(scenario)
    for node in ("gpu-01", "gpu-02", "gpu-03"):
        store.create("pods", probe_pod(node))
    await settle(sim)
    broken = sim.exec("default", "probe-gpu-01", "probe", ["chroot", "/host", "nvidia-smi"])
    assert broken.exit_code == 9
    assert broken.stdout.startswith(b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    none = sim.exec("default", "probe-gpu-02", "probe", ["chroot", "/host", "nvidia-smi"])
    assert none.exit_code == 127 and b"chroot: failed to run command 'nvidia-smi'" in none.stderr
    new = sim.exec("default", "probe-gpu-03", "probe", ["chroot", "/host", "nvidia-smi"])
    report = parse_table(new.stdout.decode(), new.exit_code)
    assert (report.header_style, report.driver_version, report.cuda_version) == ("kmd", "610.57.04", "13.3")
    assert b"Driver Version:" not in new.stdout


async def test_probe_pods_see_the_host() -> None:
    sim, store = world("noexec-run")
    store.create("pods", probe_pod("gpu-a10-01"))
    store.create(
        "pods",
        probe_pod("cp-01", ["sh", "-c", "uname -r 2>&1; echo @$?; test -w /host/usr/local 2>&1; echo @$?"], "Never"),
    )
    await settle(sim)
    probe = store.get("pods", "probe-gpu-a10-01", "default")
    assert probe["status"]["phase"] == "Running"
    mount = sim.exec(
        "default", "probe-gpu-a10-01", "probe", ["findmnt", "-T", "/host/run/nvidia/driver", "-n", "-o", "OPTIONS"]
    )
    assert mount.exit_code == 0 and "noexec" in mount.stdout.decode().split(",")
    table = (
        sim.exec("default", "probe-gpu-a10-01", "probe", ["findmnt", "-T", "/host/run"]).stdout.decode().splitlines()
    )
    assert table[0].split() == ["TARGET", "SOURCE", "FSTYPE", "OPTIONS"]
    assert table[1].split()[:3] == ["/host/run", "tmpfs", "tmpfs"]
    assert sim.exec("default", "probe-gpu-a10-01", "probe", ["test", "-d", "/host/etc/containerd"]).exit_code == 0
    done = store.get("pods", "probe-cp-01", "default")
    assert done["status"]["phase"] == "Succeeded"
    assert sim.logs("default", "probe-cp-01", "probe") == "5.15.0-1048-nvidia\n@0\n@0\n"


async def test_noexec_run_fails_the_driver_validation() -> None:
    sim, store = world("noexec-run")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    driver = pods_of(store)["gpu-a10-01"]
    assert status_of(driver, "nvidia-driver-ctr")["image"] == "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"
    assert status_of(driver, "nvidia-driver-ctr")["ready"] is True
    validator = pods_of(store, app="nvidia-operator-validator")["gpu-a10-01"]
    assert waiting_reason(validator, "driver-validation") == "CrashLoopBackOff"
    log = sim.logs(NS, validator["metadata"]["name"], "driver-validation")
    assert "permission denied: exit status 126" in log
    chroot = sim.exec(
        NS,
        driver["metadata"]["name"],
        "nvidia-driver-ctr",
        ["chroot", "/run/nvidia/driver", "nvidia-smi"],
    )
    assert chroot.exit_code == 126
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "notReady"


async def test_toolkit_writes_the_containerd_drop_in() -> None:
    sim, store = world("ubuntu-upstream")
    store.create(
        "clusterpolicies",
        cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20", toolkit_dir="/opt/nvidia"),
    )
    await settle(sim)
    toolkit = store.get("daemonsets", "nvidia-container-toolkit-daemonset", NS)
    env = {e["name"]: e.get("value") for e in toolkit["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["ROOT"] == "/opt/nvidia"
    pod = pods_of(store, app="nvidia-container-toolkit-daemonset")["gpu-h100-01"]["metadata"]["name"]
    grep = sim.exec(
        NS,
        pod,
        "nvidia-container-toolkit-ctr",
        ["chroot", "/host", "grep", "-n", "BinaryName", "/etc/containerd/conf.d/99-nvidia.toml"],
    )
    assert grep.exit_code == 0
    assert (
        grep.stdout.decode().splitlines()[0] == '12:        BinaryName = "/opt/nvidia/toolkit/nvidia-container-runtime"'
    )


async def test_exec_fail_nodes_refuse_exec() -> None:
    sim, store = world(
        {
            "name": "flaky",
            "nodes": [{"name": "n1", "os_id": "ubuntu", "os_version": "22.04", "kernel": "5.15.0-1048-nvidia"}],
            "faults": {"exec_fail_nodes": ["n1"]},
        }
    )
    store.create("pods", probe_pod("n1"))
    await settle(sim)
    result = sim.exec("default", "probe-n1", "probe", ["true"])
    assert result.exit_code == 1 and b"error dialing backend" in result.stderr


async def test_pods_without_a_node_are_scheduled_or_left_unschedulable() -> None:
    sim, store = world("ubuntu-upstream")
    pod = probe_pod("x")
    del pod["spec"]["nodeName"]
    pod["metadata"]["name"] = "anywhere"
    store.create("pods", pod)
    pinned = probe_pod("x")
    del pinned["spec"]["nodeName"]
    pinned["metadata"]["name"] = "nowhere"
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "gpu-h100-09"}
    store.create("pods", pinned)
    await settle(sim)
    assert store.get("pods", "anywhere", "default")["spec"]["nodeName"] == "cp-01"
    assert store.get("pods", "anywhere", "default")["status"]["phase"] == "Running"
    stuck = store.get("pods", "nowhere", "default")["status"]
    assert stuck["phase"] == "Pending"
    assert stuck["conditions"][0]["reason"] == "Unschedulable"
    assert "0/4 nodes are available" in stuck["conditions"][0]["message"]


async def test_a_sandbox_still_starts_when_the_simulation_was_busy_long_past_its_start_latency() -> None:
    """A tick of thousands of pods can outlast a pod's start latency by many seconds: the pod must still
    start when the simulation gets to it (it was once forgotten after 5 s and stayed Pending for good);
    a waiting pod whose node is gone is dropped instead, so that nothing wakes up for it forever."""
    sim, store = world("ubuntu-upstream")
    nodes = [n["metadata"]["name"] for n in store.list("nodes")]
    sim.kubelet.start_latency = 0.05
    for node in nodes[:2]:
        store.create("pods", probe_pod(node))
    await settle(sim)
    assert all("containerStatuses" not in p["status"] for p in store.list("pods", "default"))
    assert sim.next_wake() is not None
    sim.kubelet._bound = {uid: (seen - 60, key) for uid, (seen, key) in sim.kubelet._bound.items()}  # busy for 60 s
    store.delete("nodes", nodes[1])
    assert sim.next_wake() == 0.0
    sim.wake()
    await settle(sim)
    started = store.get("pods", f"probe-{nodes[0]}", "default")
    assert started is not None and started["status"]["phase"] == "Running"
    assert sim.next_wake() is None  # the pod of the deleted node is no longer waited for


def test_gpu_uuids_are_rfc4122_name_based_and_the_table_is_laid_out_once_per_gpu_shape() -> None:
    for name in ("gpu-h100-0001/gpu/0", "ü/gpu/7", ""):
        ident = uuid.uuid5(uuid.NAMESPACE_OID, name)
        assert smi._uuid5_oid(name) == (str(ident), ident.int)
    smi._table_body.cache_clear()
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    tables = {smi.table("580.126.20", smi.gpus_for(f"n{i}", "NVIDIA-H200", 8), when) for i in range(20)}
    assert len(tables) == 1 and smi._table_body.cache_info().misses == 1
    (text,) = tables
    assert text.startswith("Fri Jan  2 03:04:05 2026       \n") and parse_table(text, 0).gpu_count == 8
