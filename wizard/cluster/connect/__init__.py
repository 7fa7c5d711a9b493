"""Connecting: opening a cluster for ``Cluster.connect``, and how its images are reached for the image checks.

Owns :mod:`~.connection` (credentials like kubectl, proof the server accepts them) and
:mod:`~.registry_routing` (the registry client's routes and trust: the demo's marker or this machine's
mirrors, under the user's). A flow: may import core, the gateway, access and errors, never another flow.
"""
