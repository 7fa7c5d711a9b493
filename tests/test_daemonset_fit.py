"""The nodes a DaemonSet belongs on, by the DaemonSet controller's rules, and the rollout's ``ready`` waiting for
them: seen on the real control plane, the controller may count an operand DaemonSet before it has seen the
operator's node labels (0 or too few pods wanted), and the operator then says ``ready`` before the pods run."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.cluster.core.daemonset_fit import Placements, slim_scheduling
from wizard.cluster.rollouts.rollout_verdict import DaemonSetStatus, classify, driver_wanted
from wizard.engine.facts import LABEL_DEPLOY_DRIVER, LABEL_OS_ID
from wizard.engine.plan import Plan

DEPLOY = "nvidia.com/gpu.deploy.device-plugin"


def _node(labels: dict[str, str], *taints: dict[str, str]) -> dict[str, Any]:
    return slim_scheduling({"metadata": {"labels": labels}, "spec": {"taints": list(taints)}})


def _daemonset(selector: dict[str, str], tolerations: list[dict[str, str]] | None = None, **pod: Any) -> dict[str, Any]:
    spec = {"nodeSelector": selector, "tolerations": tolerations or [], **pod}
    return {"metadata": {"name": "nvidia-device-plugin-daemonset"}, "spec": {"template": {"spec": spec}}}


GPU = {DEPLOY: "true", "kubernetes.io/os": "linux"}
NODES = [
    _node(GPU),
    _node(GPU, {"key": "nvidia.com/gpu", "effect": "NoSchedule"}),
    _node(GPU, {"key": "dedicated", "value": "ml", "effect": "NoExecute"}),
    _node(GPU, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}),  # cordoned: DaemonSets stay
    _node({DEPLOY: "false"}),
    _node({}),
]

PLACED = Placements(NODES)


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 2),  # the plain node and the cordoned one
        ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], 3),
        ([{"key": "dedicated", "operator": "Equal", "value": "ml"}], 3),
        ([{"key": "dedicated", "operator": "Equal", "value": "other"}], 2),
        ([{"operator": "Exists"}], 4),  # tolerates everything
    ],
)
def test_nodes_a_daemonset_belongs_on(tolerations: list[dict[str, str]], expected: int) -> None:
    assert PLACED.nodes_to_run(_daemonset({DEPLOY: "true"}, tolerations)) == expected


def test_what_cannot_be_known_from_the_kept_labels_is_unknown() -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}
    assert PLACED.nodes_to_run(_daemonset({DEPLOY: "true"}, affinity=affinity)) is None
    assert PLACED.nodes_to_run(_daemonset({"kubernetes.io/os": "linux"})) is None  # a label the cache drops
    assert PLACED.nodes_to_run(_daemonset({})) == 4  # no selector: every node without an untolerated taint


POLICY = {"metadata": {"name": "cluster-policy"}, "status": {"state": "ready", "conditions": []}}
PREINSTALLED = Plan.model_validate({"mode": "preinstalled"})


@pytest.mark.parametrize(
    ("desired", "nodes", "phase"),
    [(0, 2, "progressing"), (1, 2, "progressing"), (2, 2, "ready"), (0, 0, "ready"), (2, None, "ready")],
)
def test_ready_waits_until_every_node_an_operand_belongs_on_is_counted(
    desired: int, nodes: int | None, phase: str
) -> None:
    operand = DaemonSetStatus("nvidia-device-plugin-daemonset", desired, desired, desired, "", True)
    found, message = classify(PREINSTALLED, POLICY, "ready", [], [], {}, {}, [operand], [], lambda _: nodes)
    assert found == phase, message
    if phase == "progressing":
        assert f"nvidia-device-plugin-daemonset wants {desired} of the 2 nodes it belongs on" in message


def test_a_driver_daemonset_short_of_its_nodes_is_still_rolling_out() -> None:
    plan = Plan.model_validate(
        {"mode": "upstream", "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia"}}
    )
    driver = DaemonSetStatus("nvidia-driver-daemonset", 1, 1, 1, "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04")
    phase, message = classify(plan, POLICY, "ready", [driver], [], {}, {}, [], [], lambda _: 3)
    assert (phase, message) == (
        "progressing",
        "driver pods ready: nvidia-driver-daemonset wants 1 of the 3 nodes it belongs on",
    )


DRIVER_DEPLOY = LABEL_DEPLOY_DRIVER
OS_ID = LABEL_OS_ID


def _named(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, **_node(labels)}


def _driver_pool(os_id: str) -> dict[str, Any]:
    return _daemonset({DRIVER_DEPLOY: "true", OS_ID: os_id})


MIXED_OS = Placements(
    [
        _named("gpu-01", {DRIVER_DEPLOY: "true", OS_ID: "ubuntu"}),
        _named("gpu-03", {DRIVER_DEPLOY: "true", OS_ID: "rhel"}),
        _named("gpu-04", {DRIVER_DEPLOY: "true", OS_ID: "rhel"}),
        _named("gpu-09", {DRIVER_DEPLOY: "false", OS_ID: "sles"}),  # kept out of the driver rollout
        _named("cp-01", {OS_ID: "ubuntu"}),
    ]
)
CRD_PLAN = Plan.model_validate(
    {
        "mode": "upstream",
        "driver": {"version": "580.126.20", "repository": "nvcr.io/nvidia", "useNvidiaDriverCRD": True},
    }
)


def test_nodes_labelled_for_a_driver_pod_that_no_driver_daemonset_places_are_named() -> None:
    """The operator makes a driver DaemonSet per OS pool (NVIDIADriver) or per kernel (precompiled), each when it
    gets to it: until the last one exists, ready would leave a node the operator labelled for a driver without one."""
    wanted = driver_wanted(CRD_PLAN, [{"spec": {}}])
    assert MIXED_OS.unplaced([_driver_pool("ubuntu")], wanted) == (2, "gpu-03")
    assert MIXED_OS.unplaced([_driver_pool("ubuntu"), _driver_pool("rhel")], wanted) is None
    # a node no NVIDIADriver selects gets no driver: nothing to wait for
    only_ubuntu = driver_wanted(CRD_PLAN, [{"spec": {"nodeSelector": {OS_ID: "ubuntu"}}}])
    assert MIXED_OS.unplaced([_driver_pool("ubuntu")], only_ubuntu) is None
    # a placement the kept labels cannot tell says nothing
    assert MIXED_OS.unplaced([_daemonset({"kubernetes.io/os": "linux"})], wanted) is None


def test_ready_waits_for_the_driver_daemonset_of_every_node_labelled_for_one() -> None:
    driver = DaemonSetStatus(
        "nvidia-gpu-driver-ubuntu22.04-6c9f8", 1, 1, 1, "nvcr.io/nvidia/driver:580.126.20-ubuntu22.04"
    )

    def verdict(unplaced: tuple[int, str] | None) -> tuple[str, str]:
        return classify(
            CRD_PLAN, POLICY, "ready", [driver], [], {}, {"default": "ready"}, [], [], None, unplaced=lambda: unplaced
        )

    assert verdict((2, "gpu-03")) == (
        "progressing",
        "waiting for the operator to create a driver DaemonSet for gpu-03 and 1 more node(s)",
    )
    assert verdict(None) == ("ready", "ClusterPolicy ready; 1 driver pod ready")
