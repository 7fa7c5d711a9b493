"""Cluster work behind one facade (:mod:`wizard.cluster.facade`): connect, preflight, apply, rollout, verify.

The room is grouped by flow, and imports only go down this list (import-linter, pyproject.toml):

- :mod:`~wizard.cluster.facade` — the front ends' one door;
- :mod:`~wizard.cluster.verification` — the pre-installed driver gate and the proof after apply (it reads the
  rollout's verdict: the one flow it may import);
- the flows, independent of each other: :mod:`~wizard.cluster.connect`, :mod:`~wizard.cluster.applying`,
  :mod:`~wizard.cluster.rollouts`, :mod:`~wizard.cluster.upgrading`, :mod:`~wizard.cluster.diagnosis`,
  :mod:`~wizard.cluster.hostchecks`;
- :mod:`~wizard.cluster.probes` — running steps on nodes' hosts in probe pods;
- :mod:`~wizard.cluster.core` — the session and what every flow shares (watch caches, discovery, preflight);
- :mod:`~wizard.cluster.gateway` — the one request path (only ``gateway.kube`` imports ``kubernetes``);
- :mod:`~wizard.cluster.access` — kubeconfig files and transport wording, without the Kubernetes client;
- :mod:`~wizard.cluster.errors` — the errors, worded for the user (the front ends catch them).

Every package's ``__init__`` is only its docstring: importing one loads nothing else.
"""
