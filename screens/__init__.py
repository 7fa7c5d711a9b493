"""Textual UI."""
