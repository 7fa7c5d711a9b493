"""Widgets shared by several steps (frame, labelled fields, YAML views, tables)."""
