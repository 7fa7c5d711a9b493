"""Following a driver rollout after an apply until it is ready, has failed, or the caller stops it.

Owns :mod:`~.rollout` (the follower, by watches) and :mod:`~.rollout_verdict` (its pure rule on the caches'
slim objects, which live in :mod:`wizard.cluster.core.rollout_cache`). A flow: may import core, the gateway,
access and errors, never another flow.
"""
