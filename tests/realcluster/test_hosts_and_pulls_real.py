"""What the lane's kwok plays besides running pods: the hosts the wizard's probe looks at, and pulls that fail.

- **Air-gapped pulls** (issue 39 item 2): a cluster whose nodes reach only the private registry
  (`RealCluster.set_reachable`), its operator running from there. A plan that leaves the operands at nvcr.io (it
  claims a runtime mirror the nodes do not have): their pods end in ErrImagePull, then ImagePullBackOff, as on a
  kubelet, and `apply` and `verify` name the image that could not be pulled; on the old stages every pod ran
  whatever its image. Then the wizard's air-gapped plan on the same cluster maps every operand image there
  (wizard/engine/operand_images.py): every pod the real operator makes pulls from it and the rollout is ready.
- **The host gate** (`apply`'s host checks, wizard/cli/hostgate.py): kwok answers every step the wizard's probe
  asks from each node's host facts (tests/realcluster/kwokhost.py). A node with nouveau loaded stops `apply`
  before anything is written, naming that node and only it; on the old stages the probe's answer had 3 of the
  20 steps and the gate said the hosts "could not be checked", then applied.
"""

from __future__ import annotations

import copy
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
    healthy_host,
    node,
    upstream_answers,
    wait_for,
    wait_settled,
)
from tests.realcluster.kwokhost import HOST_ANNOTATION, KUBERNETES_MODULES, HostFacts
from wizard.cluster.probes.probe import PROBE_LABEL
from wizard.engine import releases
from wizard.engine.operand_images import release_images

NODES = [
    node("cp-0", "ubuntu", "22.04", UBUNTU_KERNEL, gpu=False),
    node("gpu-0", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
    node("gpu-1", "ubuntu", "22.04", UBUNTU_KERNEL, product="NVIDIA-L40S"),
]
CHECKED = "✓ hosts: no blocking finding on all 2 GPU nodes"


def _push_release(registry: RegistryServer, release: str) -> None:
    """Every image of the release's chart into the private registry, at its path below the public host."""
    bundle = releases.bundle_of(release) or release
    for reference in release_images(bundle):
        path, _, tag = reference.partition("/")[2].rpartition(":")
        registry.push_image(path, tag, content=reference.encode())


def _air_gapped(cluster: RealCluster, host: str, digests: dict[str, str]) -> None:
    """Fresh nodes that reach only the private registry ``host``, the operator's Deployment running from there."""
    cluster.reset(NODES)
    cluster.use_operator_repository(f"{host}/nvidia")
    cluster.set_reachable([host])
    cluster.set_stages(digests, {}, healthy_host("/usr/local/nvidia"))
    cluster.set_driver_version(UPSTREAM_VERSION)


def _pods(cluster: RealCluster) -> list[dict[str, Any]]:
    return [
        p
        for p in cluster.get(f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]


def _images(pod: dict[str, Any]) -> list[str]:
    spec = pod["spec"]
    return [c["image"] for c in [*(spec.get("initContainers") or []), *spec["containers"]]]


def _waiting(cluster: RealCluster) -> dict[str, tuple[str, str, str]]:
    """``pod/container -> (reason, image, message)`` of every container waiting on its image."""
    out = {}
    for pod in _pods(cluster):
        status = pod.get("status") or {}
        for entry in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
            waiting = (entry.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff"):
                key = f"{pod['metadata']['name']}/{entry['name']}"
                out[key] = (waiting["reason"], entry["image"], waiting.get("message", ""))
    return out


def test_an_airgapped_plan_rolls_out_from_the_private_registry_and_nvcr_io_fails_to_pull(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    _push_release(oci_registry, cluster.release)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    driver = f"{host}/nvidia/driver:{tag}"
    digests = {driver: oci_registry.push_image("nvidia/driver", tag, content=b"airgapped operands")}
    _air_gapped(cluster, host, digests)
    registry = ["--insecure-registry", host]
    plan = upstream_answers(tmp_path, cluster.release, host)
    apply = ["apply", *as_wizard(cluster), "--yes", "--backup-dir", str(tmp_path / "b"), *registry]

    # first a plan that keeps the operands at their public hosts: it says the nodes' runtime mirrors them, which
    # these nodes do not. The image checks ask that mirror for every image, the operands' too
    # (`registry_routes.registry_hosts`), find them all, and apply goes on: the pulls fail on the nodes.
    (tmp_path / "mirrored").mkdir()
    mirrored = upstream_answers(
        tmp_path / "mirrored",
        cluster.release,
        host,
        extra=f"  registryMirrors:\n    nvcr.io: http://{host}\n    registry.k8s.io: http://{host}\n",
    )
    code, out, err = run(capsys, *apply, "--answers", str(mirrored), "--wait-timeout", "240")
    assert code == 1, out + err
    assert "cannot check" not in err and "images: " in err and " images present where the cluster pulls from" in err
    failed = [line for line in err.splitlines() if "rollout" in line and "failed" in line]
    assert failed, err
    assert "nvcr.io/nvidia/" in failed[-1] and ("ImagePullBackOff" in failed[-1] or "ErrImagePull" in failed[-1])
    assert "no such host" in failed[-1], failed
    waiting = wait_for(
        "a container in ImagePullBackOff",
        lambda: (w := _waiting(cluster)) and any(r == "ImagePullBackOff" for r, _, _ in w.values()) and w,
        60,
    )
    assert {image.split("/", 1)[0] for _, image, _ in waiting.values()} <= {"nvcr.io", "registry.k8s.io"}, waiting
    for reason, image, message in waiting.values():
        if reason == "ImagePullBackOff":  # the kubelet's wording: the back-off, then the pull's own error
            assert message.startswith(f'Back-off pulling image "{image}": ErrImagePull: rpc error: '), message
    code, out, err = run(capsys, "verify", "--answers", str(mirrored), *as_wizard(cluster), *registry)
    assert code == 1, out + err
    assert 'Back-off pulling image "nvcr.io/nvidia/' in out and "ImagePullBackOff" in out, out  # its diagnosis
    # the driver pod's init container could not pull its image: the diagnosis names it, not the driver image (#418)
    assert "the driver manager image (k8s-driver-manager) cannot be pulled" in out, out
    assert "the driver image cannot be pulled" not in out, out

    # the air-gapped plan over that failed rollout: every operand image mapped to the private registry (read from the
    # operator's own image), every pod pulls from it, the rollout is ready. The old pods' ImagePullBackOff (on the
    # nvcr.io references of images the plan moves) is the operator's to replace, not a failure of the new rollout
    # (`rollout_verdict.replaced`; `apply` failed at once on them before).
    code, _, err = run(capsys, *apply, "--answers", str(plan))
    assert code == 0, err
    assert f"note: driver.operandRegistry: {host}" in err, err
    assert CHECKED in err and "could not be checked" not in err, err
    assert "rollout: ready" in err, err
    pods = _pods(cluster)
    elsewhere = {i for p in pods for i in _images(p) if not i.startswith(f"{host}/")}
    assert not elsewhere, elsewhere
    assert {p["metadata"]["name"].rsplit("-", 1)[0] for p in pods} >= {
        "nvidia-driver-daemonset",
        "nvidia-container-toolkit-daemonset",
        "nvidia-device-plugin-daemonset",
    }
    assert not _waiting(cluster)
    wait_settled(cluster)
    code, out, err = run(capsys, "verify", "--answers", str(plan), *as_wizard(cluster), *registry)
    assert code == 0 and out.endswith("✓ summary: all 2 GPU nodes verified\n"), out + err


def _probes_left(cluster: RealCluster) -> list[str]:
    selector = "labelSelector=" + urllib.parse.quote(PROBE_LABEL)
    sets = cluster.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets?{selector}")["items"]
    pods = cluster.get(f"/api/v1/namespaces/{NAMESPACE}/pods?{selector}")["items"]
    return [o["metadata"]["name"] for o in [*sets, *pods]]


@pytest.mark.parametrize("real_cluster", operator_releases()[-1:], indirect=True)
def test_apply_stops_before_any_write_on_the_node_with_nouveau(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    nouveau = copy.deepcopy(NODES)  # gpu-1's host has nouveau loaded, as its NodeList item says; gpu-0: a clean host
    nouveau[2]["metadata"]["annotations"] = {HOST_ANNOTATION: json.dumps({"nouveau": True})}
    cluster.reset(nouveau)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=b"nouveau")}
    cluster.set_stages(digests, {})
    plan = upstream_answers(tmp_path, cluster.release, host)
    code, out, err = run(
        capsys,
        "apply",
        "--answers",
        str(plan),
        *as_wizard(cluster),
        "--yes",
        "--backup-dir",
        str(tmp_path / "b"),
        "--insecure-registry",
        host,
    )
    assert code == 1, out + err
    assert "nothing applied" in err and "found 1 blocking problem(s) on 1 node(s)" in err, err
    (finding,) = [line for line in err.splitlines() if "nouveau" in line and not line.lstrip().startswith("fix:")]
    assert "gpu-1" in finding and "gpu-0" not in finding, finding
    assert "could not be checked" not in err, err
    assert not cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]  # nothing written
    wait_for("the probe's DaemonSet and pods to be gone", lambda: not _probes_left(cluster), 60)

    cluster.set_stages(digests, {}, {"gpu-1": HostFacts()})  # nouveau blacklisted on gpu-1: the same apply goes on
    code, out, err = run(
        capsys,
        "apply",
        "--answers",
        str(plan),
        *as_wizard(cluster),
        "--yes",
        "--no-wait",
        "--backup-dir",
        str(tmp_path / "b"),
        "--insecure-registry",
        host,
    )
    assert code == 0, out + err
    assert CHECKED in err, err
    assert cluster.get("/apis/nvidia.com/v1/clusterpolicies")["items"]


@pytest.mark.parametrize("real_cluster", operator_releases()[-1:], indirect=True)
def test_apply_sees_nouveau_below_the_modules_kubernetes_loaded(
    real_cluster: RealCluster, oci_registry: RegistryServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, host = real_cluster, oci_registry.host
    cluster.reset(NODES)
    tag = f"{UPSTREAM_VERSION}-ubuntu22.04"
    digests = {f"{host}/nvidia/driver:{tag}": oci_registry.push_image("nvidia/driver", tag, content=b"nouveau")}
    cluster.set_stages(digests, {}, {"gpu-1": HostFacts(nouveau=True, later_modules=KUBERNETES_MODULES)})
    plan = upstream_answers(tmp_path, cluster.release, host)
    argv = ["apply", "--answers", str(plan), *as_wizard(cluster), "--yes", "--no-wait", "--insecure-registry", host]
    code, out, err = run(capsys, *argv, "--backup-dir", str(tmp_path / "b"))
    assert code == 1 and "nouveau" in err and "nothing applied" in err, out + err
    assert "could not be checked" not in err, err  # every step's answer fit: nothing cut, nothing left unknown
