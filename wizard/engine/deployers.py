"""What the CLI's parser says of the operator's chart and its GitOps formats, declared apart from
:mod:`wizard.engine.gitops` and :mod:`wizard.engine.operator_install` so the parser names them without loading the
engine (``tests/test_cli_startup.py``: parsing loads no pydantic)."""

from __future__ import annotations

DEPLOYERS = ("helm", "helmfile", "argocd", "flux")
"""The formats ``gpu-wizard bundle --deployer`` writes."""
CHART_HELP = "a local chart folder, a packaged chart (.tgz) or an oci:// reference"
"""What ``--chart`` takes (``apply --install-operator``, ``bundle``)."""
