"""The demo's driver upgrade evicts what the upgrade plan lists, and its GPU workloads run (issue 35 item 8,
defect 20).

The operator's upgrade library deletes a node's GPU pods as it leaves ``pod-deletion-required`` and drains it
(when ``drain.enable``) as it leaves ``drain-required``; a scenario's workloads ran before the demo started, so
their images are on their nodes (no ImagePullBackOff for a CUDA image the scenario's catalog does not list).
Real HTTPS against the demo cluster.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.helpers.cluster import connected, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main


async def _pods(demo: Any) -> dict[str, dict[str, Any]]:
    async with connected(demo) as cluster:
        found = {}
        for namespace in ("ml-team", "research", "monitoring"):
            for pod in await cluster.gateway.list_pods(namespace):
                found[f"{namespace}/{pod['metadata']['name']}"] = pod
        return found


def _waiting(pod: dict[str, Any]) -> str:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        reason = ((status.get("state") or {}).get("waiting") or {}).get("reason")
        if reason:
            return str(reason)
    return ""


def test_the_upgrade_evicts_the_listed_gpu_workloads_which_ran_before(
    capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    loaded = scenario("existing-install-plain")
    loaded.registry.catalog.pop("nvcr.io/nvidia/cuda")  # the scenario never asked for a CUDA image
    demo = demo_cluster(loaded, step_delay=0.0)
    deadline = time.monotonic() + 20
    while True:
        before = asyncio.run(_pods(demo))
        running = {k for k, p in before.items() if (p.get("status") or {}).get("phase") == "Running"}
        if len(running) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert running == {"ml-team/train-llm-0", "research/notebook-ana", "monitoring/metrics-agent"}, {
        k: _waiting(p) for k, p in before.items()
    }

    kubeconfig = str(demo.kubeconfig_path)
    code = main(["upgrade", "--driver", "580.126.20", "--dry-run", "--kubeconfig", kubeconfig])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "gpu-a100-01: ml-team/train-llm-0" in out and "research/notebook-ana" in out  # what the plan lists

    code = main(["upgrade", "--driver", "580.126.20", "--yes", "--kubeconfig", kubeconfig, "--wait-timeout", "120"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    after = asyncio.run(_pods(demo))
    assert "ml-team/train-llm-0" not in after and "research/notebook-ana" not in after  # evicted, bare pods: gone
    assert after["monitoring/metrics-agent"]["metadata"]["uid"] == before["monitoring/metrics-agent"]["metadata"]["uid"]
