"""TUI test support: SVG snapshots of the app at 80×24 and small Pilot helpers (see ``plugin``)."""
