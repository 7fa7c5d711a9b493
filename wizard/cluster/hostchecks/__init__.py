"""The host checks before apply: the node doctor's host states and the plan's host paths.

Owns :mod:`~.hostcheck` (the engine's hostdoctor steps run on GPU nodes) and :mod:`~.pathcheck` (the paths a
plan installs into). A flow: runs its steps through :mod:`wizard.cluster.probes`; may import core, the gateway,
access and errors, never another flow.
"""
