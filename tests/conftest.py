"""Shared pytest configuration: fixtures live in plugin modules, one per subsystem."""

pytest_plugins = ["tests.fixtures_demo", "tests.fixtures_faults", "tests.fixtures_registry", "tests.snapshots.plugin"]
