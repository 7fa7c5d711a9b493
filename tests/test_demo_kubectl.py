"""The demo cluster against a real kubectl: the commands of the documents give what a real cluster gives.

One demo cluster (two Ubuntu 22.04 GPU nodes and a CPU node, upstream driver from nvcr.io, the real
simulation behind it) serves the module; each kubectl run gets a fresh HOME so no discovery cache is
shared.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.demo.scenarios.scenario import NodeSpec, RegistrySpec, Scenario

KERNEL = "5.15.0-1048-nvidia"
DRIVER_DIGEST = "sha256:5dc7d887c68354d34b2c75213f027707da5c245f297d1f38465f2c10228ccdc9"
SECTIONS = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "gfd", "nodeStatusExporter", "operator")


def policy_yaml(name: str = "cluster-policy", version: str = "580.126.20") -> str:
    """A minimal ClusterPolicy, valid for the CRD (every required spec key present)."""
    sections = "".join(f"  {section}: {{}}\n" for section in SECTIONS)
    return (
        f"apiVersion: nvidia.com/v1\nkind: ClusterPolicy\nmetadata:\n  name: {name}\nspec:\n{sections}"
        f'  driver:\n    enabled: true\n    repository: nvcr.io/nvidia\n    image: driver\n    version: "{version}"\n'
        "  toolkit:\n    enabled: true\n    installDir: /usr/local/nvidia\n"
    )


@pytest.fixture(scope="module")
def cluster(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    ubuntu = NodeSpec(name="cpu", os_id="ubuntu", os_version="22.04", os_image="Ubuntu 22.04.5 LTS", kernel=KERNEL)
    return demo_cluster_module(
        Scenario(
            name="kubectl-test",
            nodes=[replace(ubuntu, name="gpu", gpu_product="NVIDIA-H200", gpu_count=8, count=2), ubuntu],
            rbac_deny=[{"verb": "delete", "resource": "nodes", "group": ""}],
            # the demo's registry answers for nvcr.io (the operator's images): the driver tag must be in it
            registry=RegistrySpec(catalog={"nvcr.io/nvidia/driver": {"580.126.20-ubuntu22.04": DRIVER_DIGEST}}),
        )
    )


@pytest.fixture(scope="module")
def applied(cluster: DemoClusterThread, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``kubectl apply --server-side`` of the ClusterPolicy, then the simulation settled; returns its output."""
    path = tmp_path_factory.mktemp("cp") / "cluster-policy.yaml"
    path.write_text(policy_yaml())
    done = kubectl(cluster, "apply", "--server-side", "-f", str(path))
    assert done.returncode == 0, done.stderr
    cluster.settle()
    return done.stdout


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_get_nodes_wide(cluster: DemoClusterThread, kubectl: Kubectl) -> None:
    lines = _ok(kubectl(cluster, "get", "nodes", "-o", "wide")).splitlines()
    assert lines[0].split()[:5] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "KERNEL-VERSION" in lines[0] and "OS-IMAGE" in lines[0] and "CONTAINER-RUNTIME" in lines[0]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert sorted(rows) == ["cpu", "gpu-01", "gpu-02"]
    assert all(" Ready " in row and KERNEL in row and "Ubuntu 22.04.5 LTS" in row for row in rows.values())


def test_server_side_apply_brings_driver_pods_up(cluster: DemoClusterThread, kubectl: Kubectl, applied: str) -> None:
    assert applied.strip() == "clusterpolicy.nvidia.com/cluster-policy serverside-applied"
    template = '{range .items[*]}{.metadata.name}{"\\t"}{.spec.toolkit.installDir}{"\\n"}{end}'
    assert (
        _ok(kubectl(cluster, "get", "clusterpolicy", "-o", f"jsonpath={template}"))
        == "cluster-policy\t/usr/local/nvidia\n"
    )
    template = (
        '{range .items[*]}{.metadata.name}{"\\t"}{.spec.containers[0].image}{"\\t"}'
        '{.status.containerStatuses[0].imageID}{"\\n"}{end}'
    )
    out = _ok(
        kubectl(
            cluster,
            "get",
            "pods",
            "-n",
            "gpu-operator",
            "-l",
            "app=nvidia-driver-daemonset",
            "-o",
            f"jsonpath={template}",
        )
    )
    rows = [line.split("\t") for line in out.splitlines()]
    assert len(rows) == 2
    for name, image, image_id in rows:
        assert name.startswith("nvidia-driver-daemonset-")
        assert image == "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"
        assert image_id.startswith("nvcr.io/nvidia/driver@sha256:")
    table = _ok(kubectl(cluster, "get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-driver-daemonset"))
    assert table.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert all(line.split()[1:3] == ["1/1", "Running"] for line in table.splitlines()[1:])


def _driver_pod(cluster: DemoClusterThread, kubectl: Kubectl) -> str:
    name = _ok(kubectl(cluster, "get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-driver-daemonset",
                       "-o", "jsonpath={.items[0].metadata.name}"))  # fmt: skip
    assert name
    return name


def test_exec_nvidia_smi_and_exit_codes(cluster: DemoClusterThread, kubectl: Kubectl, applied: str) -> None:
    pod = _driver_pod(cluster, kubectl)
    out = _ok(kubectl(cluster, "exec", pod, "-n", "gpu-operator", "-c", "nvidia-driver-ctr", "--", "nvidia-smi"))
    assert "NVIDIA-SMI" in out and "H200" in out
    failed = kubectl(cluster, "exec", pod, "-n", "gpu-operator", "-c", "nvidia-driver-ctr", "--", "no-such-command")
    assert failed.returncode == 127 and "command terminated with exit code 127" in failed.stderr
    missing = kubectl(cluster, "exec", "nope", "-n", "gpu-operator", "--", "true")
    assert missing.returncode == 1 and 'pods "nope" not found' in missing.stderr


def test_client_side_apply_then_server_side_conflict(
    cluster: DemoClusterThread, kubectl: Kubectl, tmp_path: Path
) -> None:
    path = tmp_path / "cp.yaml"
    path.write_text(policy_yaml("csa-policy"))
    assert _ok(kubectl(cluster, "apply", "-f", str(path))).strip() == "clusterpolicy.nvidia.com/csa-policy created"
    path.write_text(policy_yaml("csa-policy", version="570.172.08"))
    assert _ok(kubectl(cluster, "apply", "-f", str(path))).strip() == "clusterpolicy.nvidia.com/csa-policy configured"
    path.write_text(policy_yaml("csa-policy", version="580.126.20"))
    conflict = kubectl(cluster, "apply", "--server-side", "--field-manager=gpu-wizard", "-f", str(path))
    assert conflict.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using nvidia.com/v1: .spec.driver.version'
        in conflict.stderr
    )
    forced = kubectl(
        cluster, "apply", "--server-side", "--field-manager=gpu-wizard", "--force-conflicts", "-f", str(path)
    )
    assert _ok(forced).strip() == "clusterpolicy.nvidia.com/csa-policy serverside-applied"
    _ok(kubectl(cluster, "delete", "clusterpolicy", "csa-policy"))


def test_get_nodes_watch_sees_a_label_change(cluster: DemoClusterThread, kubectl: Kubectl) -> None:
    watcher = kubectl.popen(cluster, "get", "nodes", "-w", "-L", "demo", "--request-timeout=20s")
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in watcher.stdout or []:
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    seen: list[str] = []

    def read_until(text: str) -> str:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                seen.append(lines.get(timeout=0.2))
                if text in seen[-1]:
                    return seen[-1]
        raise AssertionError(f"kubectl get nodes -w printed no line with {text!r}: {seen}")

    try:
        assert read_until("NAME").split()[-1] == "DEMO"
        read_until("gpu-02")
        _ok(kubectl(cluster, "label", "node", "gpu-01", "demo=watched"))
        assert read_until("watched").split()[0] == "gpu-01"
    finally:
        watcher.kill()
        watcher.wait()
        reader.join(5)
        for pipe in (watcher.stdout, watcher.stderr):
            if pipe is not None:
                pipe.close()


def test_rbac_and_protobuf_bodies(cluster: DemoClusterThread, kubectl: Kubectl) -> None:
    assert _ok(kubectl(cluster, "auth", "can-i", "patch", "clusterpolicies.nvidia.com")).strip() == "yes"
    denied = kubectl(cluster, "auth", "can-i", "delete", "nodes")
    assert denied.returncode == 1 and denied.stdout.strip() == "no"
    forbidden = kubectl(cluster, "delete", "node", "cpu")
    assert forbidden.returncode == 1 and "Error from server (Forbidden)" in forbidden.stderr
    assert _ok(kubectl(cluster, "create", "namespace", "trainees")).strip() == "namespace/trainees created"
    _ok(kubectl(cluster, "create", "configmap", "repo", "-n", "trainees", "--from-literal=a.list=deb http://x y main"))
    assert "deb http://x y main" in _ok(kubectl(cluster, "get", "configmap", "repo", "-n", "trainees", "-o", "yaml"))
    _ok(kubectl(cluster, "delete", "namespace", "trainees"))


@pytest.mark.skipif(not os.access("/usr/bin/kubectl", os.X_OK), reason="no preinstalled kubectl dispatcher")
def test_preinstalled_kubectl_dispatcher(cluster: DemoClusterThread, kubectl: Kubectl, applied: str) -> None:
    version = _ok(kubectl(cluster, "version", binary="/usr/bin/kubectl"))
    assert "Server Version: v1.33.4+gpu-wizard-demo" in version
    pod = _driver_pod(cluster, kubectl)
    out = kubectl(
        cluster,
        "exec",
        pod,
        "-n",
        "gpu-operator",
        "-c",
        "nvidia-driver-ctr",
        "--",
        "nvidia-smi",
        binary="/usr/bin/kubectl",
    )
    assert "NVIDIA-SMI" in _ok(out)


def test_demo_serve_command(kubectl: Kubectl, tmp_path: Path) -> None:
    """``gpu-wizard demo serve``: banner, export line, a working kubeconfig (0600), clean stop on Ctrl-C."""
    config = tmp_path / "demo.kubeconfig"
    command = [sys.executable, "-c", "import sys; from wizard.demo.serve import main; sys.exit(main(sys.argv[1:]))"]
    server = subprocess.Popen(
        [
            *command,
            "--scenario",
            "sle-micro-precompiled",
            "--port",
            "0",
            "--step-delay",
            "0",
            "--kubeconfig",
            str(config),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = [server.stdout.readline() for _ in range(10)]
        assert "SIMULATED" in banner[0]
        assert f"  export KUBECONFIG={config}\n" in banner
        assert config.stat().st_mode & 0o777 == 0o600
        env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(tmp_path)}
        nodes = subprocess.run(
            [kubectl.binary, "get", "nodes", "-o", "name"], env=env, capture_output=True, text=True, timeout=30
        )
        assert nodes.returncode == 0 and "node/" in nodes.stdout, nodes.stderr
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=15)
    assert server.returncode == 0, err
    assert "stopping the demo cluster" in out


def test_what_the_operator_chart_installs_is_served(demo_cluster: ClusterFactory, kubectl: Kubectl) -> None:
    """A helm install of the GPU Operator's chart needs its RBAC kinds served and its CRDs Established."""
    demo = demo_cluster("no-operator")
    crd = (Path(__file__).resolve().parents[1] / "assets/operator/v26.7.0/nvidia.com_clusterpolicies.yaml").read_text()
    created = kubectl(demo, "apply", "--server-side", "-f", "-", input=crd)
    assert created.returncode == 0, created.stderr
    waited = kubectl(demo, "wait", "--for=condition=Established", "crd/clusterpolicies.nvidia.com", "--timeout=20s")
    assert waited.returncode == 0, waited.stderr
    rbac = "rbac.authorization.k8s.io/v1"
    subject = "subjects: [{kind: ServiceAccount, name: gpu-operator, namespace: gpu-operator}]"
    manifests = f"""apiVersion: v1
kind: ServiceAccount
metadata: {{name: gpu-operator, namespace: gpu-operator}}
---
apiVersion: {rbac}
kind: ClusterRole
metadata: {{name: gpu-operator}}
rules: [{{apiGroups: [""], resources: [nodes], verbs: [get]}}]
---
apiVersion: {rbac}
kind: ClusterRoleBinding
metadata: {{name: gpu-operator}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gpu-operator}}
{subject}
---
apiVersion: {rbac}
kind: Role
metadata: {{name: gpu-operator, namespace: gpu-operator}}
rules: [{{apiGroups: [""], resources: [pods], verbs: [get]}}]
---
apiVersion: {rbac}
kind: RoleBinding
metadata: {{name: gpu-operator, namespace: gpu-operator}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: gpu-operator}}
{subject}
"""
    done = kubectl(demo, "apply", "--server-side", "-f", "-", input=manifests)
    assert done.returncode == 0, done.stderr
    listed = kubectl(demo, "get", "serviceaccounts,roles,rolebindings", "-n", "gpu-operator", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert set(listed.stdout.split()) >= {
        "serviceaccount/gpu-operator",
        "role.rbac.authorization.k8s.io/gpu-operator",
        "rolebinding.rbac.authorization.k8s.io/gpu-operator",
    }
