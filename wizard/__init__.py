"""gpu-wizard: the headless engine and its rooms (engine, cluster, registry, cli, demo).

See docs/architecture.md for which room owns what and which way imports go.
"""
