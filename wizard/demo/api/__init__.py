"""The demo's Kubernetes API server: store, reads and writes, watch, server-side apply, exec, discovery, faults.

Knows Kubernetes' API conventions, nothing about GPUs; the simulators in ``wizard.demo.sim`` act on its store.
"""
