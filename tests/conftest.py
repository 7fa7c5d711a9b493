"""Shared pytest configuration: fixtures live in plugin modules, one per subsystem."""

import os

import pytest

# The real-cluster lane (tests/realcluster) runs serially on its own: `make test-real` sets this.
collect_ignore = [] if os.environ.get("GPU_WIZARD_REALCLUSTER") == "1" else ["realcluster"]

pytest_plugins = [
    "tests.helpers.fixtures.demo",
    "tests.helpers.fixtures.faults",
    "tests.helpers.fixtures.registry",
    "tests.helpers.browser",  # the chromium_browser fixture of the browser tests
    "tests.snapshots.plugin",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``slow`` tests first (in their order): pytest-xdist hands tests out in this order, so the long ones
    start while the other worker still has short ones to take, instead of one worker ending the run alone
    on a long walk. ``make test`` still runs them all; ``-m "not slow"`` leaves them out."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
