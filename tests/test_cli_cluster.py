"""``gpu-wizard discover | render | mirror | apply | verify | rollback`` end to end: demo cluster, real registry, real skopeo."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.cluster import SLE_TAG, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.fixtures.registry import RegistryServer
from wizard.cli.main import main


def answers(path: Path, repository: str, source: str) -> Path:
    path.write_text(
        "version: 1\nmode: precompiled\n"
        f"driver:\n  version: '580.126.09.1'\n  repository: {repository}\n  source: {source}\n"
        "toolkit:\n  installDir: /run/nvidia/toolkit-install\n"
    )
    return path


def test_render_mirror_apply_verify_on_sle_micro(
    demo_cluster: ClusterFactory,
    oci_registry: RegistryServer,
    skopeo_tool: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    host = oci_registry.host
    source_digest = oci_registry.push_image("upstream/nvidia-driver", SLE_TAG, content=b"sle micro build")
    loopback = scenario("sle-micro-precompiled")
    loopback.registry = dataclasses.replace(loopback.registry, url=oci_registry.url)
    demo = demo_cluster(loopback)
    cluster = ["--kubeconfig", str(demo.kubeconfig_path)]
    plan = answers(tmp_path / "answers.yaml", f"{host}/mlops", f"{host}/upstream")
    target = f"{host}/mlops/nvidia-driver:{SLE_TAG}"

    code, out, err = run(capsys, "render", "--answers", str(plan), *cluster)
    assert code == 0, err
    assert "kind: ClusterPolicy" in out and "version: 580.126.09.1" in out

    code, out, err = run(capsys, "mirror", "--answers", str(plan), *cluster, "--run", "--insecure-registry", host)
    assert code == 0, err
    assert f"docker://{host}/upstream/nvidia-driver:{SLE_TAG} docker://{target}" in out
    assert "mirrored 1 of 1 images" in err
    assert oci_registry.digest_of("mlops/nvidia-driver", SLE_TAG) == source_digest

    backups = tmp_path / "backups"
    code, out, err = run(capsys, "apply", "--answers", str(plan), *cluster, "--yes", "--backup-dir", str(backups))
    assert code == 0, err
    assert "+    version: 580.126.09.1" in out
    assert "rollout: ready: ClusterPolicy ready; 2 driver pods ready" in err
    (backup,) = backups.iterdir()

    code, out, err = run(capsys, "verify", "--answers", str(plan), *cluster, "--insecure-registry", host)
    assert code == 0, out
    assert f"✓ driver-image gpu-h200-01: {target}\n" in out
    assert f"✓ image-digest gpu-h200-02: {source_digest} matches the registry\n" in out
    assert out.endswith("✓ summary: all 2 GPU nodes verified\n")

    code, out, err = run(capsys, "verify", *cluster, "--insecure-registry", host, "-o", "json")  # plan read back
    report = json.loads(out)
    assert code == 0 and report["ok"] is True and report["demo"] is True
    assert report["plan"]["driver"]["repository"] == f"{host}/mlops"
    assert {c["check"] for c in report["checks"]} >= {"cluster-policy", "driver-image", "image-digest", "nvidia-smi"}
    assert any("NVIDIA-SMI" in line for line in report["output"]["gpu-h200-01"])

    code, out, err = run(capsys, "rollback", "--backup", str(backup), *cluster)
    assert (code, out) == (0, "deleted ClusterPolicy/cluster-policy (created by the apply)\n")


def test_verify_on_missing_tuple_names_the_node_and_the_tag(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster("missing-tuple")
    cluster = ["--kubeconfig", str(demo.kubeconfig_path)]
    plan = answers(tmp_path / "answers.yaml", "registry.example.com/mlops", "docker.io/alaudadockerhub")
    code, _, err = run(capsys, "apply", "--answers", str(plan), *cluster, "--yes", "--backup-dir", str(tmp_path))
    assert code == 1 and "nothing applied" in err and "--allow-missing-images" in err  # refused: the image is missing
    code, _, err = run(
        capsys,
        "apply",
        "--answers",
        str(plan),
        *cluster,
        "--yes",
        "--backup-dir",
        str(tmp_path),
        "--allow-missing-images",
    )
    assert code == 1 and "rollout: failed:" in err and "gpu-b-01" in err
    code, out, _ = run(capsys, "verify", "--answers", str(plan), *cluster, "--no-registry")
    assert code == 1
    missing = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.171-default-sle-micro5.5"
    failed = [line for line in out.splitlines() if line.startswith("✗ driver-pod gpu-b-01:")]
    assert failed and missing in failed[0] and "ImagePullBackOff" in failed[0]
    checks, diagnosis = out.split("\ndiagnosis (", 1)  # after the checks: why the node fails
    assert checks.endswith("✗ summary: 1 of 3 GPU nodes failed: gpu-b-01 (2 checks SKIPPED)\n")
    assert "gpu-b-01" in diagnosis and "(NVIDIA/gpu-operator#1220)" in diagnosis


def test_apply_dry_run_and_preflight_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    plan = answers(tmp_path / "answers.yaml", "registry.example.com/mlops", "docker.io/alaudadockerhub")
    code, out, err = run(capsys, "apply", "--answers", str(plan), "--demo", "sle-micro-precompiled", "--dry-run")
    assert code == 0 and "+kind: ClusterPolicy" in out and "nothing applied" in err and "SIMULATED" in err
    denied = demo_cluster(
        scenario("sle-micro-precompiled", rbac_deny=[{"verb": "create", "resource": "clusterpolicies"}])
    )
    code, out, err = run(capsys, "apply", "--answers", str(plan), "--kubeconfig", str(denied.kubeconfig_path), "--yes")
    assert code == 2 and "✗ permission: missing permission: create clusterpolicies.nvidia.com" in err
    assert err.endswith("gpu-wizard: error: preflight failed; nothing applied\n")
    code, _, err = run(capsys, "apply", "--answers", str(plan), "--kubeconfig", str(denied.kubeconfig_path))
    assert code == 2  # not asked: no terminal to confirm on, and no --yes


def test_discover_and_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "discover", "--demo", "mixed-os", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["recommendedMode"]["value"] == "upstream"
    assert sorted(g["tagOS"] for g in doc["groups"]) == ["rhel9", "ubuntu22.04"]

    code, out, err = run(capsys, "verify", "--demo", "no-such-scenario")
    assert code == 2 and err.startswith("gpu-wizard: error: unknown scenario 'no-such-scenario'") and not out
    code, _, err = run(capsys, "discover", "--kubeconfig", str(tmp_path / "none"))
    assert code == 2 and err.splitlines() == [
        f"gpu-wizard: error: no kubeconfig found (looked at {tmp_path / 'none'})",
        "  hint: pass --kubeconfig FILE, set KUBECONFIG, or use --demo to try the built-in demo cluster",
    ]
    code, _, err = run(capsys, "verify", "--demo", "sle-micro-precompiled", "--concurrency", "0")
    assert code == 2 and "--concurrency: 0 is not a positive number of nodes" in err
    code, _, err = run(capsys, "verify", "--demo", "sle-micro-precompiled")  # nothing installed yet
    assert code == 2 and "no ClusterPolicy in the cluster to verify against" in err and "--answers" in err


def test_ctrl_c_during_verify_deletes_the_probe_daemonset(demo_cluster: ClusterFactory, tmp_path: Path) -> None:
    demo = demo_cluster("preinstalled")
    plan = tmp_path / "answers.yaml"
    plan.write_text("version: 1\nmode: preinstalled\n")
    argv = ["--answers", str(plan), "--kubeconfig", str(demo.kubeconfig_path)]
    assert main(["apply", *argv, "--yes", "--backup-dir", str(tmp_path), "--no-wait"]) == 0
    demo.settle()  # the operator's pods are up
    demo.cluster.sim.kubelet.start_latency = 60  # the probe pods stay Pending: the verification waits for them
    proc = subprocess.Popen(
        [sys.executable, "-m", "wizard", "verify", *argv, "--no-registry"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def probes(kind: str) -> list[str]:
        found = demo.call(lambda: demo.store.list(kind, "gpu-operator"))
        return [o["metadata"]["name"] for o in found if o["metadata"]["name"].startswith("gpu-wizard-probe-")]

    deadline = time.monotonic() + 20
    while not probes("pods") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert probes("daemonsets") and probes("pods"), "the probe pods were never created"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130 and err.rstrip().endswith("gpu-wizard: interrupted") and "Traceback" not in err
    assert probes("daemonsets") == []  # deleted before the process exited
    demo.settle()
    assert probes("pods") == []  # and its pods with it (the garbage collector)


def test_demo_without_a_scenario_and_before_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 25: ``render --demo`` wanted a scenario though ``gpu-wizard --demo`` does not, and ``gpu-wizard --demo S
    render`` dropped the flag, then said "use --demo"; the ``answers init`` hint ended in "…"."""
    plan = tmp_path / "answers.yaml"
    code, _, err = run(capsys, "answers", "init", "-o", str(plan))
    assert code == 0 and not err.rstrip().endswith(("...", "…")) and "--demo" in err and "--nodes" in err
    code, out, _ = run(capsys, "render", "--answers", str(plan), "--demo", "-o", "images")
    assert code == 0 and "gpu-h200-02\t" in out  # the default scenario's nodes
    code, out, err = run(capsys, "--demo", "mixed-os", "render", "--answers", str(plan), "-o", "images")
    assert code == 0 and "gpu-03\t" in out and "gpu-h200-02" not in out  # mixed-os's nodes
    code, out, _ = run(capsys, "--demo", "mixed-os", "answers", "init")  # issue 35: the defaults for that cluster
    assert code == 0 and "useNvidiaDriverCRD: true" in out
    code, _, err = run(capsys, "--demo", "mixed-os", "examples")
    assert code == 2 and err == "gpu-wizard: error: --demo: `gpu-wizard examples` uses no cluster; leave --demo out\n"
    code, _, err = run(capsys, "--demo", "mixed-os", "discover", "--demo", "preinstalled")
    assert code == 2 and "--demo given twice" in err
