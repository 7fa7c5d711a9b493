"""Field ownership on the real server: a ClusterPolicy made by hand, ``--force-conflicts``, and the operator's reports.

The demo's server-side apply is our own reading of Kubernetes (wizard/demo/api/ssa.py); here the real
kube-apiserver decides who owns which field. A policy the admin created with ``kubectl create`` belongs
to kubectl's manager: the wizard's apply of a new driver version must be refused with that manager
named and nothing changed, and go through with ``--force-conflicts``, after which the real operator
rolls the new image out. Then the same answers again are "no changes", while the operator goes on
writing the policy's status (the guarded write of tests/test_apply_guard.py, on the real thing).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.registry import RegistryServer
from tests.realcluster.cluster import RealCluster
from tests.realcluster.flows import (
    UBUNTU_KERNEL,
    UPSTREAM_VERSION,
    as_wizard,
    container,
    driver_daemonsets,
    healthy_host,
    node,
    upstream_answers,
    wait_for,
    wait_settled,
)

NEW_VERSION = "580.126.21"


def _driver_image(cluster: RealCluster) -> str:
    found = driver_daemonsets(cluster)
    return str(container(next(iter(found.values())), "nvidia-driver-ctr")["image"]) if found else ""


def test_a_hand_made_policy_is_taken_over_only_with_force_conflicts(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    nodes = [
        node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
        *[node(f"gpu-l40s-{i}", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S") for i in range(2)],
    ]
    cluster.reset(nodes)
    digests = {}
    for version in (UPSTREAM_VERSION, NEW_VERSION):
        tag = f"{version}-ubuntu22.04"
        digests[f"{host}/nvidia/driver:{tag}"] = oci_registry.push_image("nvidia/driver", tag, content=tag.encode())
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)
    plan = upstream_answers(tmp_path, cluster.release, host)
    registry = ["--insecure-registry", host]
    backups = ["--backup-dir", str(tmp_path / "backups")]

    # the admin renders the policy and creates it by hand: kubectl's manager owns every field
    code, rendered, err = run(capsys, "render", "--answers", str(plan), *as_wizard(cluster))
    assert code == 0, err
    cluster.kubectl_stdin(rendered, "create", "-f", "-")
    wait_for("the driver DaemonSet", lambda: _driver_image(cluster).endswith(f"{UPSTREAM_VERSION}-ubuntu22.04"), 120)
    managers = {
        m["manager"]
        for m in cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"][0]["metadata"]["managedFields"]
        if m.get("subresource") != "status"
    }
    assert managers == {"kubectl-create"}, managers

    # a new version: refused, the manager named, nothing changed
    (tmp_path / "new").mkdir()
    new_plan = upstream_answers(tmp_path / "new", cluster.release, host, version=NEW_VERSION)
    apply = ["apply", "--answers", str(new_plan), *as_wizard(cluster), "--yes", *backups, *registry]
    code, out, err = run(capsys, *apply)
    assert code == 2, out + err
    assert "conflict with field manager 'kubectl-create'" in err and "--force-conflicts" in err, err
    assert "nothing applied" in err, err
    policy = cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"][0]
    assert policy["spec"]["driver"]["version"] == UPSTREAM_VERSION

    # with --force-conflicts: applied, and the real operator rolls the new image out
    cluster.set_driver_version(NEW_VERSION)
    code, out, err = run(capsys, *apply, "--force-conflicts")
    assert code == 0, out + err
    wait_for("the new driver image", lambda: _driver_image(cluster).endswith(f"{NEW_VERSION}-ubuntu22.04"), 120)
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(new_plan), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err

    # the same answers again, while the operator keeps writing the status: nothing to change
    code, out, err = run(capsys, *apply)
    assert (code, out) == (0, "no changes: the cluster already holds this plan\n"), err
