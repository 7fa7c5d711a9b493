"""Shared pytest configuration: fixtures live in plugin modules, one per subsystem."""

import os

# The real-cluster lane (tests/realcluster) runs serially on its own: `make test-real` sets this.
collect_ignore = [] if os.environ.get("GPU_WIZARD_REALCLUSTER") == "1" else ["realcluster"]

pytest_plugins = [
    "tests.fixtures_demo",
    "tests.fixtures_faults",
    "tests.fixtures_registry",
    "tests.helpers.browser",  # the chromium_browser fixture of the browser tests
    "tests.snapshots.plugin",
]
