"""Bundled data (package data: wizard.assets)."""
