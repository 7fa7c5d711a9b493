"""Shared pytest configuration: fixtures live in plugin modules, one per subsystem.

The state folder (backups, crash logs, the kept request log) is a temporary one for the whole run:
commands run in-process must not write into the developer's own.
"""

import os
import tempfile

os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="gpu-wizard-test-state-")

pytest_plugins = ["tests.fixtures_demo", "tests.fixtures_faults", "tests.fixtures_registry", "tests.snapshots.plugin"]
