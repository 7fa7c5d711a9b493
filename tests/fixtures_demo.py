"""Fixtures for the demo cluster (filled by the demo-cluster work)."""
