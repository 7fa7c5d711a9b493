"""What every flow of the cluster room shares: one connected cluster's session and what it has read.

Owns :mod:`~.session` (handed to every implementation instead of the facade), the watch caches
(:mod:`~.caches`: one feed per kind; :mod:`~.watchcache`: the one watch cache), :mod:`~.slices` (time
slices that keep the loop responsive), :mod:`~.discovery` (the nodes as facts), :mod:`~.preflight` and
:mod:`~.preflight_refs` (what the user may do and what the cluster runs), :mod:`~.liveplan` (the plan a cluster
runs), :mod:`~.operator_status` (the operator's own state), the slim objects the watch caches keep
(:mod:`~.rollout_cache`, :mod:`~.daemonset_fit`) and :mod:`~.leftover_sets` (the live DaemonSets the engine's
leftovers rule reads: the apply and the rollout both judge them). May import the gateway, access and errors;
never a flow, the probes or the facade.
"""
