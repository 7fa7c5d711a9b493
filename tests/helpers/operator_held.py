"""The demo operator held still, so that a test alone writes the ClusterPolicy's status (as the real operator
does, ``meta.SetStatusCondition``: the Ready condition's flip time), while the kubelet and the DaemonSet
controller go on."""

from __future__ import annotations

import datetime as dt
from typing import Any

from wizard.cluster.core.preflight import POLICY
from wizard.cluster.facade import Cluster
from wizard.demo.api.store import Store
from wizard.demo.scenarios.scenario import Scenario
from wizard.demo.sim.operator_sim import ClusterPolicyController, OperatorInfo
from wizard.demo.sim.simulation import Simulation
from wizard.demo.sim.simutil import Writer


class HeldController(ClusterPolicyController):
    """The demo operator's ClusterPolicy controller, which does nothing while ``held``."""

    held = False

    def reconcile(self, writer: Writer, operator: OperatorInfo) -> None:
        if not self.held:
            super().reconcile(writer, operator)


class OperatorHeld(Simulation):
    """The demo's simulation with :class:`HeldController` as its operator."""

    def __init__(self, scenario: Scenario, store: Store) -> None:
        super().__init__(scenario, store)
        self.policies = HeldController(scenario.operator.release)


def _stamp(at: dt.datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_status(state: str, since: dt.datetime) -> dict[str, Any]:
    """The status the operator writes (``meta.SetStatusCondition``: the Ready condition's flip time)."""
    if state == "ready":
        ready = {"type": "Ready", "status": "True", "reason": "Reconciled", "message": "ClusterPolicy is ready"}
        error = {"type": "Error", "status": "False", "reason": "Ready", "message": ""}
    else:
        ready = {"type": "Ready", "status": "False", "reason": "Error", "message": ""}
        error = {
            "type": "Error",
            "status": "True",
            "reason": "OperandNotReady",
            "message": "ClusterPolicy is not ready, states not ready: [gpu-feature-discovery]",
        }
    stamp = _stamp(since)
    return {
        "state": state,
        "conditions": [{**ready, "lastTransitionTime": stamp}, {**error, "lastTransitionTime": stamp}],
    }


async def write_status(cluster: Cluster, state: str, since: dt.datetime) -> None:
    gateway = cluster.gateway
    patch = gateway.raw(gateway.custom, "patch_cluster_custom_object_status")
    body = {"status": policy_status(state, since)}
    await gateway.call("writing status", patch, *POLICY, "cluster-policy", body, safe=False)
