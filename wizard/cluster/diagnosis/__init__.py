"""After a failure: why a node's driver is not ready, and the support bundle.

Owns :mod:`~.diagnose` (a failing node's driver and validator logs, events, upgrade state) and
:mod:`~.support` (the support bundle's files, never a Secret). A flow: may import core, the gateway, access and
errors, never another flow.
"""
