"""Helpers the test modules share: no test module imports another (tests/test_test_layout.py checks)."""
