"""A probe pod is followed by a watch of that one pod until it runs, never read on a timer (issue 38).

Against the demo cluster over real HTTPS; the requests are counted in the product's own request log
(:mod:`wizard.requestlog`): the old follower read the pod every 0.1 s until it ran.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cluster import connected
from tests.helpers.demo_thread import DemoClusterThread
from tests.helpers.fixtures.demo import ClusterFactory
from wizard import requestlog
from wizard.cluster.probes.probe import ProbePod

NAMESPACE = "gpu-operator"


@pytest.fixture(scope="module")
def demo(demo_cluster_module: ClusterFactory) -> Iterator[DemoClusterThread]:
    yield demo_cluster_module("sle-micro-precompiled")


@pytest.fixture
def request_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    log = tmp_path / "requests.log"
    monkeypatch.setenv(requestlog.ENV, str(log))
    requestlog.configure()
    try:
        yield log
    finally:
        requestlog.close()


def pod_requests(log: Path, name: str) -> list[str]:
    """``METHOD kind`` of each request about the pod: ``GET read``, ``WATCH watch``, ``GET exec``…"""
    found = []
    for line in log.read_text().splitlines():
        method = line.split()[2]
        if f"/pods/{name}?" in line or line.split()[3].endswith(f"/pods/{name}"):
            found.append(f"{method} read")
        elif f"/pods/{name}/" in line:
            found.append(f"{method} {line.split()[3].split(f'/pods/{name}/')[1].split('?')[0]}")
        elif re.search(rf"fieldSelector=metadata\.name%3D{re.escape(name)}\b", line):
            found.append(f"{method} watch")
    return found


async def test_a_probe_pod_is_watched_until_it_runs_not_read_on_a_timer(
    demo: DemoClusterThread, request_log: Path
) -> None:
    async with (
        connected(demo) as cluster,
        ProbePod(cluster.gateway, "gpu-h200-01", NAMESPACE, "busybox:1.36", timeout=10) as shell,
    ):
        name = shell.pod
    requests = pod_requests(request_log, name)
    assert "GET read" not in requests, requests
    assert requests.count("WATCH watch") == 1, requests
