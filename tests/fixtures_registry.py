"""Fixtures for the real OCI registry on loopback (filled by the registry work)."""
