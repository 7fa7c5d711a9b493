"""A ``ready`` with NoGPUNodes over nodes that carry GPU labels is the real operator's moment, not a verdict.

The lane's fresh-clone run at cb654e5 failed two pre-installed rollouts on the real operator (v26.7.0; v25.10.1
after precompiled): the follower, holding a confirmed ready for 3 s, read "ready, NoGPUNodes" in that window and
ended as failed; a second later the operator said ready again. Over labelled GPU nodes it is now waited out (the
follower bounds the wait: ``rollout.FALSE_READY_S``); with no GPU-labelled node it is the failure it says.
"""

from __future__ import annotations

from typing import Any

from wizard.cluster.rollouts.rollout_verdict import FALSE_READY_WAIT, classify
from wizard.engine.plan import Plan


def _policy(reason: str) -> dict[str, Any]:
    ready = {"type": "Ready", "status": "True", "reason": reason, "message": "No GPU node found"}
    return {"metadata": {"name": "cluster-policy"}, "status": {"state": "ready", "conditions": [ready]}}


def test_no_gpu_nodes_over_labelled_gpu_nodes_is_waited_out() -> None:
    plan = Plan.model_validate({"mode": "preinstalled"})
    phase, message = classify(plan, _policy("NoGPUNodes"), "ready", [], [], {}, {}, [], [], None, [], gpu_nodes=2)
    assert phase == "progressing" and message.startswith(FALSE_READY_WAIT), message
    assert "ClusterPolicy says ready, but NoGPUNodes" in message


def test_no_gpu_nodes_without_a_labelled_gpu_node_fails_at_once() -> None:
    plan = Plan.model_validate({"mode": "preinstalled"})
    phase, message = classify(plan, _policy("NoGPUNodes"), "ready", [], [], {}, {}, [], [], None, [], gpu_nodes=0)
    assert phase == "failed" and message.startswith("ClusterPolicy says ready, but NoGPUNodes"), message
