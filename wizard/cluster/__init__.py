"""Cluster work behind one facade (:mod:`wizard.cluster.facade`): connect, preflight, apply, rollout, verify.

Only :mod:`wizard.cluster.gateway` imports ``kubernetes``; the rest speaks to the API through it.
"""
