"""Registry work: the OCI registry client and its auth, image checks against it, and the skopeo mirror runner.

Imports the engine's rules and aiohttp; never the cluster, the CLI or the screens.
"""
