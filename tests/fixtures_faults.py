"""Fixtures for tests that make the demo cluster fail requests (its ``faults``): a cluster with faults off.

``faults_demo`` is a demo cluster (SLE Micro, precompiled driver, plain HTTP) shared by the test module,
with every fault switched off and the injection counts zeroed before each test and switched off again
after it, so that one test's faults never reach the next. :func:`faults_off` does the same around a
module's own cluster (another scenario, other start options).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests.fixtures_demo import ClusterFactory
from wizard.demo.api.faults import Faults
from wizard.demo.serve import DemoClusterThread


def _switch_off(faults: Faults) -> None:
    faults.clear()
    faults.injected.clear()
    faults.error_code = Faults().error_code  # a test's 403 or 429 must not be the next test's error


@contextlib.contextmanager
def faults_off(demo: DemoClusterThread) -> Iterator[DemoClusterThread]:
    """``demo`` with no fault and no count, and its faults switched off again afterwards."""
    _switch_off(demo.faults)
    try:
        yield demo
    finally:
        _switch_off(demo.faults)


@pytest.fixture(scope="module")
def _faults_cluster(demo_cluster_module: ClusterFactory) -> DemoClusterThread:
    return demo_cluster_module("sle-micro-precompiled", tls=False)


@pytest.fixture
def faults_demo(_faults_cluster: DemoClusterThread) -> Iterator[DemoClusterThread]:
    """The module's demo cluster, its faults off before and after the test (see the module's docstring)."""
    with faults_off(_faults_cluster) as demo:
        yield demo
