"""The app's stylesheet, read from the bundled ``assets/styles/*.tcss`` through ``wizard.bundled``."""

from __future__ import annotations

STYLESHEETS = ("app.tcss",)


def app_css() -> str:
    """All stylesheets of the app, concatenated in order."""
    from wizard.bundled import asset_text

    return "\n".join(asset_text("styles", name) for name in STYLESHEETS)
