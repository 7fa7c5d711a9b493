"""A notReady ClusterPolicy's hint points at the state that is not ready (issue 35's walk, k3s-suse-helm).

The Helm install runs a pre-installed driver (driver.enabled=false); its toolkit crash-loops on SL Micro's read-only
/usr/local, and the operator says ``states not ready: [state-container-toolkit …]``. Connect's hint said "see the driver
pods' events": there is no driver pod in that cluster.
"""

from __future__ import annotations

from wizard.engine.policy_health import policy_health


def _policy(message: str) -> dict[str, object]:
    return {
        "metadata": {"name": "cluster-policy"},
        "status": {
            "state": "notReady",
            "namespace": "gpu-operator",
            "conditions": [{"type": "Ready", "status": "False", "reason": "OperandNotReady", "message": message}],
        },
    }


def test_a_toolkit_not_ready_is_not_sent_to_the_driver_pods() -> None:
    message = "ClusterPolicy is not ready, states not ready: [state-container-toolkit state-operator-validation]"
    health = policy_health(_policy(message))
    assert not health.ready and "driver pods" not in health.hint
    assert "state-container-toolkit" in health.hint and "kubectl get pods -n gpu-operator" in health.hint


def test_a_driver_not_ready_still_names_the_driver_pods() -> None:
    health = policy_health(_policy("ClusterPolicy is not ready, states not ready: [state-driver state-device-plugin]"))
    assert health.hint == "gpu-wizard apply follows the rollout; see the driver pods' events"
