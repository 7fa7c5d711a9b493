"""A pod waiting on an image the live ClusterPolicy itself names is the rollout's failure, never "the operator's to
replace" (:func:`wizard.cluster.rollouts.rollout_verdict.replaced`): the operator rolls pods to its spec, not away from it."""

from __future__ import annotations

from wizard.cluster.core.rollout_cache import PodStatus
from wizard.cluster.rollouts.rollout_verdict import classify
from wizard.engine.plan import Plan

POLICY = {
    "metadata": {"name": "cluster-policy"},
    "status": {"state": "notReady", "conditions": [{"type": "Ready", "status": "False", "reason": "x"}]},
}


def test_a_pod_waiting_on_what_the_live_policy_asks_for_fails_the_rollout() -> None:
    """Issue 35's walk of ``no-operator`` with ``--chart`` a chart folder from the operator's repository (appVersion
    ``main-latest``): the chart's ClusterPolicy names ``gpu-operator:main-latest`` for the validator, which nvcr.io
    does not hold. The rollout said "waiting for the operator to replace … which the plan moves" for ever; the live
    policy asks for that image, so the operator never replaces the pod: the rollout fails, naming the pull error."""
    plan = Plan.model_validate(
        {
            "mode": "precompiled",
            "operator": {"version": "v26.7.0"},
            "driver": {"version": "580", "repository": "nvcr.io/nvidia"},
        }
    )
    image = "nvcr.io/nvidia/gpu-operator:main-latest"
    policy = {
        **POLICY,
        "spec": {"validator": {"repository": "nvcr.io/nvidia", "image": "gpu-operator", "version": "main-latest"}},
    }
    pod = PodStatus(
        "nvidia-operator-validator-x1",
        "gpu-1",
        "Pending",
        "ImagePullBackOff",
        "Back-off pulling",
        "driver-validation",
        image,
    )
    phase, message = classify(plan, policy, "notReady", [], [pod], {}, {}, [])
    assert phase == "failed", message
    assert message.startswith("nvidia-operator-validator-x1 on gpu-1 (driver-validation): ImagePullBackOff"), message
