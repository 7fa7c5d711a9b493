"""The simulated operator, kubelet and node shell, driven through the real demo Store.

Each test seeds a bundled scenario, writes what a user (or the wizard) would write, ticks the
simulation until it is stable and checks what ``kubectl get`` / ``exec`` / ``logs`` would show.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from wizard.demo.scenario import load_scenario, scenario_from_dict
from wizard.demo.simulation import Simulation
from wizard.demo.store import Store
from wizard.facts import LABEL_DEPLOY_DRIVER, LABEL_UPGRADE_STATE
from wizard.naming import nvidiadriver_daemonset_name
from wizard.nvsmi import parse_query_csv, parse_table

NS = "gpu-operator"
SLE_KERNEL = "5.14.21-150500.55.166-default"
SLE_TAG = f"580.126.09.1-{SLE_KERNEL}-sle-micro5.5"
SLE_DIGEST = "sha256:e6da525dc703a4144b1b099762da5390adadc1a1a9863406e5deac48fb877aa4"
RUN_TOOLKIT = "/run/nvidia/toolkit-install"


def cluster_policy(
    name: str = "cluster-policy", toolkit_dir: str = "/usr/local/nvidia", **driver: Any
) -> dict[str, Any]:
    """A hand-written ClusterPolicy with every CRD-required section."""
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": name},
        "spec": {
            "operator": {"defaultRuntime": "containerd"},
            "daemonsets": {},
            "driver": {"enabled": True, **driver},
            "toolkit": {"enabled": True, "installDir": toolkit_dir},
            "validator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": "v26.7.0"},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": False},
            "gfd": {"enabled": False},
            "nodeStatusExporter": {"enabled": False},
        },
    }


SLE_POLICY = cluster_policy(
    toolkit_dir=RUN_TOOLKIT,
    usePrecompiled=True,
    repository="registry.example.com/mlops",
    image="nvidia-driver",
    version="580.126.09.1",
)


def world(scenario: str | dict[str, Any]) -> tuple[Simulation, Store]:
    """A seeded simulation of a bundled scenario (or one given as a dict)."""
    loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario_from_dict(scenario)
    store = Store()
    sim = Simulation(loaded, store)
    sim.seed()
    return sim, store


async def settle(sim: Simulation, limit: int = 150) -> int:
    """Tick until nothing changes; the number of ticks it took."""
    for count in range(1, limit + 1):
        if not await sim.tick():
            return count
    raise AssertionError(f"the simulation did not settle in {limit} ticks")


def pods_of(store: Store, app: str = "", component: str = "nvidia-driver") -> dict[str, dict[str, Any]]:
    """Operator pods by node name, selected by ``app`` or ``app.kubernetes.io/component``."""
    out = {}
    for pod in store.list("pods", NS):
        labels = pod["metadata"].get("labels") or {}
        if (app and labels.get("app") == app) or (not app and labels.get("app.kubernetes.io/component") == component):
            out[pod["spec"]["nodeName"]] = pod
    return out


def status_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod["status"]
    for cs in status.get("initContainerStatuses", []) + status.get("containerStatuses", []):
        if cs["name"] == container:
            return cs
    raise AssertionError(f"no status for {container}")


def waiting_reason(pod: dict[str, Any], container: str) -> str:
    return status_of(pod, container)["state"].get("waiting", {}).get("reason", "")


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == kind)


async def test_precompiled_sle_micro_driver_pods_run_the_mirrored_tuple() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)

    name = f"nvidia-driver-daemonset-{SLE_KERNEL}-sle-micro5.5"
    ds = store.get("daemonsets", name, NS)
    assert ds is not None
    assert ds["metadata"]["labels"]["app.kubernetes.io/component"] == "nvidia-driver"
    assert ds["metadata"]["labels"]["nvidia.com/precompiled"] == "true"
    assert ds["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/gpu.deploy.driver": "true",
        "feature.node.kubernetes.io/kernel-version.full": SLE_KERNEL,
    }
    assert ds["metadata"]["ownerReferences"][0]["kind"] == "ClusterPolicy"
    assert ds["status"]["numberReady"] == ds["status"]["desiredNumberScheduled"] == 2

    driver = pods_of(store)
    assert sorted(driver) == ["gpu-h200-01", "gpu-h200-02"]
    for node, pod in driver.items():
        assert pod["status"]["phase"] == "Running"
        assert pod["spec"]["nodeName"] == node
        assert pod["metadata"]["ownerReferences"][0] == {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": name,
            "uid": ds["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert pod["metadata"]["labels"]["pod-template-generation"] == "1"
        assert pod["metadata"]["labels"]["controller-revision-hash"]
        ctr = status_of(pod, "nvidia-driver-ctr")
        assert ctr["image"] == f"registry.example.com/mlops/nvidia-driver:{SLE_TAG}"
        assert ctr["imageID"] == f"registry.example.com/mlops/nvidia-driver@{SLE_DIGEST}"
        assert (ctr["ready"], ctr["restartCount"], ctr["started"]) == (True, 0, True)
        assert "startedAt" in ctr["state"]["running"]
        manager = pod["status"]["initContainerStatuses"][0]
        assert manager["name"] == "k8s-driver-manager"
        assert manager["state"]["terminated"]["reason"] == "Completed"

    policy = store.get("clusterpolicies", "cluster-policy")
    assert policy["status"]["state"] == "ready"
    assert policy["status"]["namespace"] == NS
    assert condition(policy, "Ready")["reason"] == "Reconciled"
    node = store.get("nodes", "gpu-h200-01")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["metadata"]["labels"]["nvidia.com/gpu.present"] == "true"
    assert node["metadata"]["labels"][LABEL_UPGRADE_STATE] == "upgrade-done"
    assert store.get("nodes", "cp-01")["metadata"]["labels"].get("nvidia.com/gpu.present") is None


async def test_status_passes_through_operand_not_ready() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    seen = set()
    for _ in range(60):
        changed = await sim.tick()
        policy = store.get("clusterpolicies", "cluster-policy")
        if policy.get("status"):
            error = condition(policy, "Error")
            seen.add((policy["status"]["state"], error["reason"], error.get("message", "")))
        if not changed:
            break
    assert (
        "notReady",
        "OperandNotReady",
        "ClusterPolicy is not ready, states not ready: "
        "[state-driver state-container-toolkit state-operator-validation state-device-plugin]",
    ) in seen
    assert ("ready", "Ready", "") in seen


async def test_toolkit_on_read_only_usr_local_crash_loops_on_sle_micro() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create(
        "clusterpolicies", cluster_policy(**{k: v for k, v in SLE_POLICY["spec"]["driver"].items() if k != "enabled"})
    )
    await settle(sim)
    toolkit = pods_of(store, app="nvidia-container-toolkit-daemonset")["gpu-h200-01"]
    assert waiting_reason(toolkit, "nvidia-container-toolkit-ctr") == "CrashLoopBackOff"
    log = sim.logs(NS, toolkit["metadata"]["name"], "nvidia-container-toolkit-ctr")
    assert "mkdir /usr/local/nvidia: read-only file system" in log
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "notReady"


async def test_missing_tuple_shows_image_pull_backoff_on_that_node_only() -> None:
    sim, store = world("missing-tuple")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    driver = pods_of(store)
    assert status_of(driver["gpu-a-01"], "nvidia-driver-ctr")["ready"] is True
    stuck = driver["gpu-b-01"]
    assert stuck["status"]["phase"] == "Pending"
    assert waiting_reason(stuck, "nvidia-driver-ctr") == "ImagePullBackOff"
    image = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5"
    message = status_of(stuck, "nvidia-driver-ctr")["state"]["waiting"]["message"]
    assert f'Failed to pull image "{image}": rpc error: code = NotFound' in message
    assert f'failed to resolve reference "{image}": {image}: not found' in message
    policy = store.get("clusterpolicies", "cluster-policy")
    assert condition(policy, "Error")["reason"] == "OperandNotReady"
    assert "state-driver" in condition(policy, "Error")["message"]


async def test_preinstalled_nodes_get_the_label_and_lose_their_driver_pod() -> None:
    sim, store = world("preinstalled")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    for name in ("gpu-l40s-01", "gpu-l40s-02"):
        assert store.get("nodes", name)["metadata"]["labels"][LABEL_DEPLOY_DRIVER] == "pre-installed"
    assert pods_of(store) == {}
    validator = pods_of(store, app="nvidia-operator-validator")["gpu-l40s-01"]
    log = sim.logs(NS, validator["metadata"]["name"], "driver-validation")
    assert "Attempting to validate a pre-installed driver on the host" in log
    assert "Detected a pre-installed driver on the host" in log
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"
    result = sim.exec(NS, validator["metadata"]["name"], "nvidia-operator-validator", ["chroot", "/host", "nvidia-smi"])
    report = parse_table(result.stdout.decode(), result.exit_code)
    assert (report.ok, report.driver_version, report.gpu_count) == (True, "580.126.20", 4)
    ready = sim.exec(
        NS, validator["metadata"]["name"], "nvidia-operator-validator", ["cat", "/run/nvidia/validations/driver-ready"]
    )
    assert "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\n" in ready.stdout.decode()


async def test_driver_disabled_keeps_the_deploy_label_true() -> None:
    sim, store = world("preinstalled")
    store.create("clusterpolicies", cluster_policy(enabled=False))
    await settle(sim)
    assert store.get("nodes", "gpu-l40s-01")["metadata"]["labels"][LABEL_DEPLOY_DRIVER] == "true"
    assert [d["metadata"]["name"] for d in store.list("daemonsets", NS) if "driver" in d["metadata"]["name"]] == []
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


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
        ["sh", "-c", "nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1"],
    )
    assert noheader.stdout == b"580.126.09\n"
    listing = sim.exec(NS, pod, "nvidia-driver-ctr", ["nvidia-smi", "-L"]).stdout.decode()
    assert listing.startswith("GPU 0: NVIDIA H200 (UUID: GPU-")
    assert sim.exec(NS, pod, "nvidia-driver-ctr", ["uname", "-r"]).stdout == f"{SLE_KERNEL}\n".encode()
    os_release = sim.exec(NS, pod, "nvidia-driver-ctr", ["cat", "/host/etc/os-release"]).stdout.decode()
    assert 'ID="sle-micro"' in os_release and 'VERSION_ID="5.5"' in os_release
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


def probe_pod(node: str, command: list[str] | None = None, restart: str = "Always") -> dict[str, Any]:
    """A pod like the wizard's node probe: pinned to a node, host root mounted at /host."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"probe-{node}", "namespace": "default"},
        "spec": {
            "nodeName": node,
            "restartPolicy": restart,
            "containers": [
                {
                    "name": "probe",
                    "image": "busybox:1.36",
                    "command": command or ["sleep", "3600"],
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }


async def test_probe_pods_see_the_host() -> None:
    sim, store = world("noexec-run")
    store.create("pods", probe_pod("gpu-a10-01"))
    store.create(
        "pods", probe_pod("cp-01", ["sh", "-c", "uname -r; test -w /host/usr/local && echo writable"], "Never")
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
    assert sim.logs("default", "probe-cp-01", "probe") == "5.15.0-1048-nvidia\nwritable\n"


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
        ["chroot", "/host", "chroot", "/run/nvidia/driver", "nvidia-smi"],
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


async def test_mixed_os_cluster_policy_uses_the_first_nodes_os_tag_everywhere() -> None:
    sim, store = world("mixed-os")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    driver = pods_of(store)
    images = {node: status_of(pod, "nvidia-driver-ctr")["image"] for node, pod in driver.items()}
    assert set(images.values()) == {"nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"}
    assert status_of(driver["gpu-01"], "nvidia-driver-ctr")["ready"] is True
    assert waiting_reason(driver["gpu-03"], "nvidia-driver-ctr") == "CrashLoopBackOff"
    log = sim.logs(NS, driver["gpu-03"]["metadata"]["name"], "nvidia-driver-ctr")
    assert "built for ubuntu22.04 but the host runs rhel9" in log


async def test_mixed_os_precompiled_names_the_pool_right_but_tags_it_wrong() -> None:
    sim, store = world("mixed-os")
    store.create(
        "clusterpolicies",
        cluster_policy(usePrecompiled=True, repository="nvcr.io/nvidia", image="driver", version="580"),
    )
    await settle(sim)
    rhel_kernel = "5.14.0-427.13.1.el9_4.x86_64"
    ds = store.get("daemonsets", "nvidia-driver-daemonset-5.14.0-427.13.1.el9.4-rhel9", NS)
    assert ds is not None
    image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == f"nvcr.io/nvidia/driver:580-{rhel_kernel}-ubuntu22.04"
    assert store.get("daemonsets", "nvidia-driver-daemonset-5.15.0-1048-nvidia-ubuntu22.04", NS) is not None


async def test_mixed_os_nvidiadriver_gets_one_pool_per_os() -> None:
    sim, store = world("mixed-os")
    store.create("clusterpolicies", cluster_policy(useNvidiaDriverCRD=True))
    nvd = store.create(
        "nvidiadrivers",
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "NVIDIADriver",
            "metadata": {"name": "default"},
            "spec": {
                "default": True,
                "driverType": "gpu",
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": "580.126.20",
            },
        },
    )
    await settle(sim)
    uid = nvd["metadata"]["uid"]
    for tag in ("ubuntu22.04", "rhel9"):
        ds = store.get("daemonsets", nvidiadriver_daemonset_name("gpu", tag, uid, ""), NS)
        assert ds["metadata"]["labels"]["nvidia.com/node.os-version"] == tag
        assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == f"nvcr.io/nvidia/driver:580.126.20-{tag}"
    driver = pods_of(store)
    assert all(status_of(p, "nvidia-driver-ctr")["ready"] for p in driver.values())
    status = store.get("nvidiadrivers", "default")["status"]
    assert (status["state"], condition(store.get("nvidiadrivers", "default"), "Ready")["reason"]) == (
        "ready",
        "Reconciled",
    )
    assert store.get("daemonsets", "nvidia-driver-daemonset", NS) is None


async def test_nvidiadriver_is_disabled_without_the_clusterpolicy_switch() -> None:
    sim, store = world("ubuntu-upstream")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    store.create(
        "nvidiadrivers",
        {
            "apiVersion": "nvidia.com/v1alpha1",
            "kind": "NVIDIADriver",
            "metadata": {"name": "gpu"},
            "spec": {"driverType": "gpu", "repository": "nvcr.io/nvidia", "image": "driver", "version": "580.126.20"},
        },
    )
    await settle(sim)
    nvd = store.get("nvidiadrivers", "gpu")
    assert nvd["status"]["state"] == "disabled"
    error = condition(nvd, "Error")
    assert (error["reason"], error["message"]) == ("Reconciled", "useNvidiaDriverCRD is not enabled in ClusterPolicy")


@pytest.mark.parametrize(
    ("driver", "message"),
    [
        (
            {"repository": "nvcr.io/nvidia", "image": "driver", "version": ""},
            "Failed to reconcile state-driver: invalid image specification: repository, image and version must all be set",
        ),
        (
            {
                "usePrecompiled": True,
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": "sha256:" + "a" * 64,
            },
            "Failed to reconcile state-driver: specifying image digest is not supported when precompiled is enabled",
        ),
        (
            {
                "repository": "nvcr.io/nvidia",
                "image": "driver",
                "version": "580.126.20",
                "repoConfig": {"configMapName": "repos"},
            },
            "Failed to reconcile state-driver: repository configuration not supported for distribution sle-micro5.5",
        ),
    ],
)
async def test_invalid_clusterpolicy_is_reconcile_failed(driver: dict[str, Any], message: str) -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", cluster_policy(**driver))
    await settle(sim)
    policy = store.get("clusterpolicies", "cluster-policy")
    assert policy["status"]["state"] == "notReady"
    assert condition(policy, "Ready")["status"] == "False"
    error = condition(policy, "Error")
    assert (error["reason"], error["message"].split(" (")[0]) == ("ReconcileFailed", message)


async def test_second_clusterpolicy_is_ignored() -> None:
    sim, store = world("sle-micro-precompiled")
    store.create("clusterpolicies", copy.deepcopy(SLE_POLICY))
    await settle(sim)
    store.create("clusterpolicies", cluster_policy(name="another"))
    await settle(sim)
    assert store.get("clusterpolicies", "another")["status"] == {"state": "ignored", "namespace": NS}


async def test_upgrade_steps_each_node_through_the_upgrade_states() -> None:
    sim, store = world("existing-install")
    before = pods_of(store)
    assert sorted(before) == ["gpu-a100-01", "gpu-a100-02", "gpu-a100-03"]
    old = status_of(before["gpu-a100-01"], "nvidia-driver-ctr")
    assert old["image"] == "nvcr.io/nvidia/driver:570.195.03-ubuntu22.04" and old["ready"]
    assert store.get("nodes", "gpu-a100-01")["metadata"]["labels"][LABEL_UPGRADE_STATE] == "upgrade-done"

    policy = store.get("clusterpolicies", "cluster-policy")
    policy["spec"]["driver"]["version"] = "580.126.20"
    store.update("clusterpolicies", policy)
    history = {n["metadata"]["name"]: [n["metadata"]["labels"][LABEL_UPGRADE_STATE]] for n in store.list("nodes")[1:]}
    cordoned = set()
    for _ in range(200):
        changed = await sim.tick()
        for node in store.list("nodes"):
            state = node["metadata"]["labels"].get(LABEL_UPGRADE_STATE)
            if state:
                steps = history.setdefault(node["metadata"]["name"], [])
                if not steps or steps[-1] != state:
                    steps.append(state)
            if node["spec"].get("unschedulable"):
                cordoned.add(node["metadata"]["name"])
        if not changed:
            break
    assert history["gpu-a100-01"] == [
        "upgrade-done",
        "upgrade-required",
        "cordon-required",
        "wait-for-jobs-required",
        "pod-deletion-required",
        "drain-required",
        "pod-restart-required",
        "validation-required",
        "uncordon-required",
        "upgrade-done",
    ]
    assert cordoned == {"gpu-a100-01", "gpu-a100-02", "gpu-a100-03"}
    after = pods_of(store)
    for node, pod in after.items():
        assert pod["metadata"]["name"] != before[node]["metadata"]["name"]
        ctr = status_of(pod, "nvidia-driver-ctr")
        assert ctr["image"] == "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04" and ctr["ready"]
        assert ctr["imageID"].endswith("sha256:5dc7d887c68354d34b2c75213f027707da5c245f297d1f38465f2c10228ccdc9")
        assert pod["metadata"]["labels"]["pod-template-generation"] == "2"
        assert not store.get("nodes", node)["spec"].get("unschedulable")
    assert store.get("clusterpolicies", "cluster-policy")["status"]["state"] == "ready"


async def test_airgapped_pulls_only_from_the_mirror() -> None:
    sim, store = world("airgapped")
    store.create("clusterpolicies", cluster_policy(repository="nvcr.io/nvidia", image="driver", version="580.126.20"))
    await settle(sim)
    driver = pods_of(store)["gpu-h100-01"]
    message = status_of(driver, "nvidia-driver-ctr")["state"]["waiting"]["message"]
    assert "lookup nvcr.io" in message and "no such host" in message
    policy = store.get("clusterpolicies", "cluster-policy")
    policy["spec"]["driver"]["repository"] = "registry.airgap.local/nvidia"
    policy["spec"]["validator"]["repository"] = "registry.airgap.local/nvidia"
    store.update("clusterpolicies", policy)
    for pod in store.list("pods", NS):  # OnDelete: the stuck pods must go for the new image
        if pod["metadata"]["labels"].get("app.kubernetes.io/component") == "nvidia-driver":
            store.delete("pods", pod["metadata"]["name"], NS)
    await settle(sim)
    ctr = status_of(pods_of(store)["gpu-h100-01"], "nvidia-driver-ctr")
    assert (
        ctr["imageID"]
        == "registry.airgap.local/nvidia/driver@sha256:a5b89fc5c087221ea604a83337262bfa3f0ce7f22d404f9986a5e37406edc1a5"
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
