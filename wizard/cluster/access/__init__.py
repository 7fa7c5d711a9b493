"""Reaching a cluster without the Kubernetes client: kubeconfig files read like kubectl, and the transport's words.

Owns :mod:`~.kubeconfig` (finding and reading kubeconfig files, contexts, exec plugins, the demo's marker) and
:mod:`~.transport` (proxy detection, the wording of transport and status errors, exec targets). Below the
gateway, which builds on both; cheap to import (the CLI's completion lists contexts from here without loading
``kubernetes``). May import :mod:`wizard.cluster.errors` only, of the cluster room.
"""
