"""The person who runs the printed ``helm upgrade --install`` where the wizard has no helm (the demo runs none).

It renders the release's real chart (``../shared/operator-charts``, through Helm's own library in
helm-python-sdk) with the values file the wizard wrote, and creates with a real kubectl what that chart
installs and the demo API server serves: the CRDs (the chart's ``crds/``), the operator Deployment, the
ClusterPolicy and an NVIDIADriver. The RBAC objects, the NFD subchart and the Helm release Secret are what
a real helm adds beside them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures.demo import Kubectl
from tests.helpers.yaml11 import yaml11_load_all
from wizard.engine.render import to_yaml

SERVED = ("Deployment", "ClusterPolicy", "NVIDIADriver")


def chart_objects(release: str, values_file: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The chart's CRDs, and the objects of its templates the demo serves, for the values file."""
    helm_python = pytest.importorskip("helm_python.chart")
    from tests.helpers.chart_parity import _chart_dir

    chart_dir = _chart_dir(release)
    [values] = yaml11_load_all(values_file.read_text())
    with helm_python.Chart.load(str(chart_dir)) as chart:
        files = chart.render(values=values, name="gpu-operator", namespace="gpu-operator", is_install=True)
    crds = [d for path in sorted((chart_dir / "crds").glob("*.yaml")) for d in yaml11_load_all(path.read_text()) if d]
    objects = [d for text in files.values() for d in yaml11_load_all(text) if d]
    return crds, [d for d in objects if d["kind"] in SERVED]


def run_the_printed_command(release: str, values_file: Path, kubectl: Kubectl, demo: Any, done: list[str]) -> None:
    """Wait for the values file, then install what the printed command installs; ``done`` gets each kubectl's
    ``exit: output``. Meant for a thread beside the wizard, which waits for the operator meanwhile."""
    deadline = time.monotonic() + 120
    while not values_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    for docs in chart_objects(release, values_file):
        result = kubectl(demo, "apply", "--server-side", "-f", "-", input=to_yaml(docs))
        done.append(f"{result.returncode}: {result.stdout}{result.stderr}")
