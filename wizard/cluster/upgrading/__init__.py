"""What the operator is doing and what an upgrade needs: read from the cluster, decided by the engine.

Owns :mod:`~.upgrades` (the running plan, who owns the policy, GPU workloads, worded for both front ends) and
:mod:`~.live_findings` (an upgrade under way or failing driver pods, for Connect and Nodes). A flow: may import
core, the gateway, access and errors, never another flow.
"""
