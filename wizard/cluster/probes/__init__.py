"""Running check steps on nodes' hosts: one short-lived DaemonSet per run, or one probe pod and an exec.

Owns :mod:`~.hostprobe` (``run_on_hosts``, the one entry point), :mod:`~.probeset` (the DaemonSet, its script
and results), :mod:`~.probenodes` (which nodes it selects), :mod:`~.probefollow` (its pods followed by one
watch), :mod:`~.probe` (a single node's probe pod) and :mod:`~.probe_cleanup` (``gpu-wizard cleanup``). Below
the flows that use it (host checks, verification); may import core, the gateway, access and errors.
"""
