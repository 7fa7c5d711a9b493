"""Fixtures of the real-cluster lane: the binaries (built once, cached by their pins) and one running
control plane per operator release, shared by the lane's tests (run serially: `make test-real`).

Without Go the lane cannot run: under CI=true that is a failure, elsewhere a loud skip. A failing
test keeps every component's log under `.realcluster-logs/` at the repository root, and its report ends with the
cluster's state at the failure (diagnose.py), which CI prints.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realcluster.build import BuildError, Built, build
from tests.realcluster.cluster import RealCluster
from tests.realcluster.diagnose import lane_state

ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / ".realcluster-logs"


def _cannot_run(why: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"real-cluster lane cannot run under CI: {why}", pytrace=False)
    pytest.skip(f"REAL-CLUSTER LANE SKIPPED: {why}")


@pytest.fixture(scope="session")
def built() -> Built:
    if shutil.which("go") is None:
        _cannot_run("go is not installed (the lane builds kube-apiserver, etcd, kwok and the operator from Go modules)")
    try:
        return build()
    except BuildError as error:
        _cannot_run(str(error))
        raise


@pytest.fixture(scope="session")
def helm_binary(request: pytest.FixtureRequest) -> Path:
    """The lane's helm (``go/helm``, pinned). ``GPU_WIZARD_HELM`` names another build of the same pin, e.g.
    while the lane's cache is being built for another key."""
    named = os.environ.get("GPU_WIZARD_HELM")
    if named:
        return Path(named)
    built: Built = request.getfixturevalue("built")
    return built.bin / "helm"


def releases() -> list[str]:
    from tests.realcluster.build import operator_releases

    return operator_releases()


def _release_lines() -> list[str]:
    from tests.realcluster.build import unbuilt_releases

    lines = [f"real-cluster lane: GPU Operator {', '.join(releases()) or 'none'}"]
    return lines + [f"REAL-CLUSTER LANE: {release} LEFT OUT: {why}" for release, why in unbuilt_releases().items()]


def pytest_report_header() -> list[str]:
    """Which operator releases the lane runs here, and each one left out with why (at the top of the run)."""
    return _release_lines()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The same at the end, where `pytest -q` (which prints no header) shows it too."""
    terminalreporter.section("real-cluster lane")
    for line in _release_lines():
        terminalreporter.write_line(line)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item.session.stash.setdefault(_FAILED, set()).add(item.nodeid)  # type: ignore[arg-type]
        # CI prints the failure's report, not the lane's logs: the cluster's state goes into the report
        cluster = next((item.funcargs.get(n) for n in ("real_cluster", "bare_cluster") if n in item.funcargs), None)  # type: ignore[attr-defined]
        if isinstance(cluster, RealCluster) and hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection("lane state at the failure", lane_state(cluster))


_FAILED = pytest.StashKey[set[str]]()


@pytest.fixture(scope="session", params=releases())
def real_cluster(
    request: pytest.FixtureRequest, built: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealCluster]:
    """A control plane and kwok for the real operator of one release; each test brings its nodes and
    starts the operator (`RealCluster.reset`)."""
    release = request.param
    cluster = RealCluster(built, tmp_path_factory.mktemp(f"rc-{release}"), release)
    try:
        cluster.start([], operator=False)
        yield cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / release)
        cluster.stop()


@pytest.fixture(scope="module", params=releases())
def bare_cluster(
    request: pytest.FixtureRequest, built: Built, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealCluster]:
    """`make real-cluster OPERATOR=none`: a control plane with SLE Micro nodes (two kernels), without the
    operator's CRDs and without the operator, for a test that installs it (one per release)."""
    from tests.realcluster.flows import SLE_KERNELS, node

    release = request.param
    cluster = RealCluster(built, tmp_path_factory.mktemp(f"bare-{release}"), release)
    k1, k2 = SLE_KERNELS
    nodes = [
        node("cp-0", "sle-micro", "5.5", k1, gpu=False),
        node("gpu-a-0", "sle-micro", "5.5", k1),
        node("gpu-b-0", "sle-micro", "5.5", k2),
    ]
    try:
        cluster.start(nodes, installed=False)
        yield cluster
    finally:
        if request.session.stash.get(_FAILED, set()):
            cluster.keep_logs(LOGS / f"install-{release}")
        cluster.stop()
