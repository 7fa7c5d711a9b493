"""The benchmarks' `--real` lane: the same nodes on the demo and on a real kube-apiserver, side by side.

A :class:`tests.realcluster.cluster.RealCluster` (etcd, kube-apiserver, kcm, scheduler, kwok; built
once from pinned Go modules, see ``tests/realcluster/build.py``) is started with no nodes; the demo
scenario's own nodes (read from a served demo, so both servers hold the same objects: labels,
capacity, nodeInfo) are then created through the API as the admin, ``WORKERS`` at a time, and kwok
marks them Ready. The wizard reads them as the restricted ``wizard`` user, as on a real cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.demo_server import server_of

WORKERS = 16
"""Node creations in flight at once (kube-apiserver's default max-mutating-requests-inflight is 200)."""


def demo_nodes(kubeconfig: Path) -> list[dict[str, Any]]:
    """Every node of a served demo cluster, as the API returns them."""
    server, token, ca = server_of(kubeconfig)
    context = ssl.create_default_context(cafile=ca) if ca else None
    request = urllib.request.Request(f"{server}/api/v1/nodes", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=context, timeout=120) as answer:
        return list(json.loads(answer.read())["items"])


@contextlib.contextmanager
def real_cluster(nodes: list[dict[str, Any]], *, operator: bool = False) -> Iterator[Any]:
    """A real control plane holding ``nodes`` (kwok-managed, Ready), and the real operator of the newest
    built release if ``operator``; stopped on leaving. Yields the :class:`RealCluster`; ``created_s`` on it is how
    long creating the nodes until all were Ready took."""
    from tests.realcluster.build import build
    from tests.realcluster.cluster import RealCluster, kwok_node

    class BenchCluster(RealCluster):
        def _kcm_args(self) -> list[str]:
            """A node grace period of 10 minutes: kwok's lease renewals for thousands of nodes fall behind
            on 2 loaded cores, the node lifecycle controller then marks their pods not Ready, and kwok
            (unlike a kubelet) never marks them Ready again, so a rollout of 1,000 nodes never ended (seen:
            257 of 3,000 operand pods stuck). (Without the controller, the not-ready taint the API server
            puts on a new node stays, and no DaemonSet pod is placed.) kcm's client rate raised from 20/s."""
            return [
                *super()._kcm_args(),
                "--node-monitor-grace-period=600s",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ]

    built = build()
    release = built.releases()[-1]
    with tempfile.TemporaryDirectory(prefix="gpu-wizard-bench-real-") as tmp:
        cluster = BenchCluster(built, Path(tmp), release)
        try:
            cluster.start([], operator=False)
            wanted = [kwok_node(n) for n in nodes]
            start = time.perf_counter()
            with ThreadPoolExecutor(WORKERS) as pool:
                list(pool.map(lambda node: cluster.request("POST", "/api/v1/nodes", node), wanted))
            cluster.wait_for(
                f"kwok to mark {len(wanted)} nodes Ready", lambda: len(cluster._ready_nodes()) == len(wanted), 900, 2.0
            )
            cluster.created_s = time.perf_counter() - start
            if operator:
                cluster.start_operator()
            yield cluster
        finally:
            cluster.stop()


def built_kubectl() -> str:
    """The kubectl built with the real cluster (the same version as its kube-apiserver)."""
    from tests.realcluster.build import build

    return str(build().bin / "kubectl")


def server_version(cluster: Any) -> str:
    return str(cluster.get("/version")["gitVersion"])


@dataclass(frozen=True)
class RealServed:
    """A real cluster as the verification benchmark's ``Served``: the kubeconfig it connects with and the
    CPU seconds of the control plane (etcd, kube-apiserver, kcm, scheduler, kwok, the operator's wrapper)."""

    kubeconfig: Path
    cluster: Any
    settle_s: float = 5.0
    """A real cluster never idles (kwok renews every node's lease): a fixed pause between phases instead."""

    def cpu_seconds(self) -> float:
        total = 0.0
        for process in self.cluster.processes.values():
            if process.popen is None:
                continue
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{process.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total
