"""The nodes a DaemonSet belongs on, by the DaemonSet controller's rules, and the rollout's ``ready`` waiting for
them: seen on the real control plane, the controller may count an operand DaemonSet before it has seen the
operator's node labels (0 or too few pods wanted), and the operator then says ``ready`` before the pods run."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.cluster.core.daemonset_fit import Placements, slim_scheduling
from wizard.cluster.rollouts.rollout_verdict import DaemonSetStatus, classify
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
