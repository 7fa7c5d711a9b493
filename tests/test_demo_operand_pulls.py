"""The demo's kubelet pulls every operand image as a real one would behind a private registry (issue 39):
on the ``rke2-rhel-harbor`` cluster (nodes reach harbor.corp.example only) the ClusterPolicy gpu-wizard renders
without ``driver.operandRegistry`` leaves the driver manager, toolkit, device plugin and validator at nvcr.io, and
their pods end in
``ErrImagePull`` then ``ImagePullBackOff``; with it (the default the running operator's registry gives) every pod
pulls from Harbor and the policy becomes ready."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.sim import settle, world
from wizard.cli.main import main
from wizard.demo.api.store import Store
from wizard.demo.scenarios.scenario import load_scenario
from wizard.demo.sim.install import operator_deployment
from wizard.engine.defaults import driver_defaults
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.modes import Mode
from wizard.engine.plan import Plan
from wizard.engine.render import render

SCENARIO = "rke2-rhel-harbor"
NS = "gpu-operator"


def _policy(store: Store, **driver: Any) -> dict[str, Any]:
    facts = facts_from_nodelist({"items": store.list("nodes")})
    answers = {
        "mode": "upstream",
        "operator": {"version": "v26.7.0"},
        "driver": {"version": "580.126.20", "repository": "harbor.corp.example/nvidia", **driver},
    }
    return render(Plan.model_validate(answers), facts).cluster_policy


def _state(store: Store) -> str:
    policy = store.get("clusterpolicies", "cluster-policy")
    assert policy is not None
    return str(policy["status"]["state"])


def _waiting(store: Store) -> dict[str, tuple[str, str]]:
    """``pod/container -> (reason, image)`` of every operand container waiting on its image."""
    out = {}
    for pod in store.list("pods", NS):
        status_of = pod.get("status") or {}  # a pod the DaemonSet controller has just created has none yet
        statuses = [*(status_of.get("initContainerStatuses") or []), *(status_of.get("containerStatuses") or [])]
        for status in statuses:
            waiting = (status.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff"):
                out[f"{pod['metadata']['name']}/{status['name']}"] = (waiting["reason"], status["image"])
    return out


async def test_an_operand_left_at_nvcr_io_cannot_be_pulled_behind_harbor() -> None:
    sim, store = world(SCENARIO)
    store.create("clusterpolicies", _policy(store))
    await settle(sim)
    waiting = _waiting(store)
    images = {image for _, image in waiting.values()}
    # init containers first, as on a node: the validator's checks and the driver manager stop their pods
    assert "nvcr.io/nvidia/gpu-operator:v26.7.0" in images, waiting  # the validator
    assert "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0" in images, waiting
    assert all(i.split("/", 1)[0] == "nvcr.io" for i in images), images
    assert {reason for reason, _ in waiting.values()} == {"ImagePullBackOff"}, "after ErrImagePull, a back-off"
    messages = [
        s["state"]["waiting"]["message"]
        for pod in store.list("pods", NS)
        for s in [
            *((pod.get("status") or {}).get("initContainerStatuses") or []),
            *((pod.get("status") or {}).get("containerStatuses") or []),
        ]
        if (s.get("state") or {}).get("waiting", {}).get("reason") == "ImagePullBackOff"
    ]
    assert messages and all("lookup nvcr.io" in m and "no such host" in m for m in messages), messages
    events = [e for e in store.list("events", NS) if e.get("reason") == "Failed"]
    assert any("ErrImagePull" in e.get("message", "") for e in events), "the kubelet's first failure is an event"
    assert _state(store) != "ready"


async def test_every_operand_from_harbor_is_pulled_and_the_policy_is_ready() -> None:
    sim, store = world(SCENARIO)
    operator_image = operator_deployment(load_scenario(SCENARIO))["spec"]["template"]["spec"]["containers"][0]["image"]
    registry = driver_defaults(Mode.UPSTREAM, ["rhel9"], operator_image=operator_image)["operandRegistry"]
    assert registry == "harbor.corp.example"
    store.create("clusterpolicies", _policy(store, operandRegistry=registry))
    await settle(sim)
    assert _waiting(store) == {}
    images = {
        s["image"]
        for pod in store.list("pods", NS)
        for s in [
            *((pod.get("status") or {}).get("containerStatuses") or []),
            *((pod.get("status") or {}).get("initContainerStatuses") or []),
        ]
    }
    assert images and all(image.startswith("harbor.corp.example/") for image in images), images
    assert "harbor.corp.example/nvidia/k8s/container-toolkit:v1.20.0" in images
    assert _state(store) == "ready"


ANSWERS = """version: 1
mode: upstream
driver:
  version: 580.126.20
  repository: harbor.corp.example/nvidia
"""


def test_apply_maps_every_image_into_the_operators_registry(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Answers naming only the driver's registry, on a cluster whose operator runs from Harbor: ``apply`` takes Harbor
    for every other image (said in a note), checks each there and lists them before it sends anything."""
    demo = demo_cluster(SCENARIO)
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    argv = ["apply", "--answers", str(tmp_path / "answers.yaml"), "--kubeconfig", str(demo.kubeconfig_path)]
    code = main([*argv, "--yes", "--no-wait", "--backup-dir", str(tmp_path / "backups")])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "note: driver.operandRegistry: harbor.corp.example (the operator runs from it" in err
    assert "images the cluster pulls (8):" in err and "harbor.corp.example/nvidia/k8s/container-toolkit:v1.20.0" in err
    assert "images: 8 of 8 images present where the cluster pulls from (1 driver, 7 operator and operand images)" in err
    policy = demo.store.get("clusterpolicies", "cluster-policy")
    assert policy is not None
    spec = policy["spec"]
    assert spec["toolkit"]["repository"] == "harbor.corp.example/nvidia/k8s"
    assert spec["driver"]["manager"]["repository"] == "harbor.corp.example/nvidia/cloud-native"
    named = [
        v for section in spec.values() if isinstance(section, dict) for k, v in section.items() if k == "repository"
    ]
    assert named and all(r.startswith("harbor.corp.example/") for r in named), named


def test_a_plan_naming_no_registry_keeps_the_live_policys_and_says_so(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy already pulling its operands from Harbor, then answers naming no operandRegistry that also say the
    runtime mirrors nvcr.io (so the operator's registry is not taken): the plan does not own the policy's image
    repositories, which stay Harbor's, so it adopts Harbor from the live policy, says so, and lists the images the
    cluster really pulls. (It listed nvcr.io images, then "no changes", in the real-cluster lane.)"""
    demo = demo_cluster(SCENARIO)
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    base = ["--kubeconfig", str(demo.kubeconfig_path), "--yes", "--no-wait", "--backup-dir", str(tmp_path / "b")]
    assert main(["apply", "--answers", str(tmp_path / "answers.yaml"), *base]) == 0, capsys.readouterr()
    capsys.readouterr()
    mirrored = tmp_path / "mirrored.yaml"
    mirrored.write_text(ANSWERS + "  registryMirrors:\n    nvcr.io: https://nvcr-mirror.example.com\n")
    code = main(["apply", "--answers", str(mirrored), *base])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "note: driver.operandRegistry: harbor.corp.example (the live ClusterPolicy's operands come from it" in err
    assert "harbor.corp.example/nvidia/k8s/container-toolkit:v1.20.0" in err and "nvcr.io/nvidia/k8s" not in err, err
    assert "images: 8 of 8 images present where the cluster pulls from" in err, err
    policy = demo.store.get("clusterpolicies", "cluster-policy")
    assert policy is not None and policy["spec"]["toolkit"]["repository"] == "harbor.corp.example/nvidia/k8s"


def test_the_right_plan_over_a_failed_rollout_waits_for_the_operator_to_replace_the_old_pods(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Operands left at nvcr.io behind Harbor end in ImagePullBackOff; applying the plan that pulls them from Harbor
    then follows the rollout to ready: the old pods' pull failures (on nvcr.io references of images the plan moves to
    Harbor) are the operator's to replace, not the new rollout's failure (the real-cluster lane's finding:
    `apply` failed at once on them)."""
    demo = demo_cluster(SCENARIO)
    base = ["--kubeconfig", str(demo.kubeconfig_path), "--yes", "--backup-dir", str(tmp_path / "b")]
    public = tmp_path / "public.yaml"
    public.write_text(ANSWERS + "  registryMirrors:\n    nvcr.io: https://nvcr-mirror.example.com\n")
    assert main(["apply", "--answers", str(public), *base, "--no-wait", "--allow-missing-images"]) == 0
    capsys.readouterr()
    for _ in range(200):
        if any(reason == "ImagePullBackOff" for reason, _ in _waiting(demo.store).values()):
            break
        demo.settle()
    assert any(reason == "ImagePullBackOff" for reason, _ in _waiting(demo.store).values()), _waiting(demo.store)
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    code = main(["apply", "--answers", str(tmp_path / "answers.yaml"), *base, "--wait-timeout", "60"])
    _, err = capsys.readouterr()
    assert code == 0 and "rollout: ready" in err, err
    # the host probe pulls the driver manager from Harbor, not the live policy's nvcr.io image the nodes cannot pull
    assert "could not be checked" not in err and "probe pod cannot start" not in err, err
    assert _waiting(demo.store) == {}
