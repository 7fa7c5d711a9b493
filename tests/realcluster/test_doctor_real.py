"""`gpu-wizard doctor`'s host checks on the real cluster: its probe DaemonSet made, run and removed by the
real API server, kube-controller-manager and scheduler, as the restricted `wizard` user, before anything
is installed.

kwok's probe stage answers every probe pod alike with what a host's tools print (`flows.doctor_host`, in
doctor's own step order): one host state per run. The first run's hosts have nouveau loaded, the most
common reason a first install fails: doctor must name it once, with both GPU nodes and the fix for
their OS, exit 1, and leave no probe behind. The second run's hosts are clean: no findings, exit 0;
its DaemonSet selects the GPU nodes by their label, as it does past a few dozen nodes (the real
DaemonSet controller parses a one-node-per-term template once per node: quadratic, see
wizard/cluster/probes/probenodes.py), and the real controller must place pods on exactly those nodes.
The findings' judging is tested on the demo (tests/test_doctor*.py); what only the real server shows is
that the probe's objects, RBAC and cleanup work there and the answers come back through real pods.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.build import operator_releases
from tests.realcluster.cluster import NAMESPACE, RealCluster
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    as_wizard,
    doctor_host,
    node,
    upstream_answers,
    wait_for,
)
from wizard.cluster.probes import hostprobe, probenodes, probeset
from wizard.cluster.probes.probe import PROBE_LABEL

NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    node("gpu-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
]

pytestmark = pytest.mark.parametrize("real_cluster", operator_releases()[-1:], indirect=True)


def _probes_left(cluster: RealCluster) -> list[str]:
    selector = "labelSelector=" + urllib.parse.quote(PROBE_LABEL)
    sets = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets?{selector}")["items"]
    pods = cluster.get(f"/api/v1/namespaces/{NAMESPACE}/pods?{selector}")["items"]
    return [o["metadata"]["name"] for o in [*sets, *pods]]


def test_doctor_finds_nouveau_on_every_gpu_node_then_nothing_on_clean_hosts(
    real_cluster: RealCluster,
    oci_registry: RegistryServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster, host = real_cluster, oci_registry.host
    cluster.reset(NODES)
    oci_registry.push_image("nvidia/driver", f"{UPSTREAM_VERSION}-ubuntu22.04", content=b"doctor")
    plan = upstream_answers(tmp_path, cluster.release, host)
    doctor = ["doctor", "--answers", str(plan), *as_wizard(cluster), "--insecure-registry", host]

    cluster.set_stages({}, {}, doctor_host(plan, "ubuntu", UBUNTU_KERNEL, nouveau=True))
    code, out, err = run(capsys, *doctor, "-o", "json")
    assert code == 1, (out, err)
    report = json.loads(out)
    assert report["gpuNodes"] == 2 and report["mode"] == "upstream", report
    findings = [f for f in report["findings"] if f["status"] in ("fail", "warn")]
    assert [f["check"] for f in findings] == ["nouveau-loaded"], findings  # the one thing wrong, said once
    (nouveau,) = findings
    assert nouveau["nodes"] == ["gpu-0", "gpu-1"], nouveau
    assert "blacklist" in nouveau["fix"] or "modprobe" in nouveau["fix"], nouveau
    # every host check came back from the real pods, none unknown
    assert not [f for f in report["findings"] if f["status"] == "skipped"], report["findings"]
    wait_for("the probe's DaemonSet and pods to be gone", lambda: not _probes_left(cluster), 60)

    # the second run selects its nodes as it does at scale (past NAMED_MAX nodes): by the GPU label, in one
    # term, which the real DaemonSet controller must read as exactly the two GPU nodes (not cp-0)
    monkeypatch.setattr(probenodes, "NAMED_MAX", 1)
    made: list[dict[str, Any]] = []
    monkeypatch.setattr(hostprobe, "daemonset", lambda *a, **k: made.append(probeset.daemonset(*a, **k)) or made[-1])
    cluster.set_stages({}, {}, doctor_host(plan, "ubuntu", UBUNTU_KERNEL, nouveau=False))
    code, out, err = run(capsys, *doctor)
    assert code == 0, (out, err)
    assert "✓ no findings on 2 GPU node(s)" in out, out
    assert "one short-lived host probe (a DaemonSet), removed after" in err, err
    (body,) = made
    affinity = body["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert [list(t) for t in affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]] == [
        ["matchExpressions"]
    ]
    wait_for("the probe's DaemonSet and pods to be gone", lambda: not _probes_left(cluster), 60)
