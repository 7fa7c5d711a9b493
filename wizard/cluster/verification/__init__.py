"""Proving the driver works on the GPU nodes: verification after apply and the pre-installed driver gate.

Owns :mod:`~.verify` (the streamed checks; one node's in :mod:`~.verify_node`, what they share in
:mod:`~.verify_context`) and :mod:`~.proving` (what the facade runs on the nodes: the gate, and verification
once the pods settle). Above the other flows: it reads the rollout's verdict (:mod:`wizard.cluster.rollouts`),
the one flow it may import; it runs its host checks through :mod:`wizard.cluster.probes`. May import core, the
gateway, access and errors.
"""
