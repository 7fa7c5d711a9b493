"""The documents' flow on the demo cluster: a *rendered* ClusterPolicy applied with real kubectl.

`gpu-wizard render` output goes to `kubectl apply --server-side` unchanged (kubectl reads YAML 1.1,
so this also proves the rendered YAML means what was validated), and the driver pods come up with
the image the wizard predicted for each node and the catalog's digest as their imageID.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from wizard.engine.answers import load_answers
from wizard.engine.facts import facts_from_nodelist
from wizard.engine.render import render, to_yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "assets" / "examples" / "sle-micro-precompiled.answers.yaml"
JSONPATH = (
    '{range .items[*]}{.spec.nodeName}{"\\t"}{.spec.containers[0].image}{"\\t"}'
    '{.status.containerStatuses[0].imageID}{"\\t"}{.status.phase}{"\\n"}{end}'
)


def test_rendered_cluster_policy_applied_with_kubectl_runs_the_predicted_images(
    demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path
) -> None:
    cluster = demo_cluster("sle-micro-precompiled")
    nodes = kubectl(cluster, "get", "nodes", "-o", "json")
    assert nodes.returncode == 0, nodes.stderr
    plan, _ = load_answers(EXAMPLE)
    plan = plan.model_copy(
        update={"driver": plan.driver.model_copy(update={"repository": "registry.example.com/mlops"})}
    )
    rendered = render(plan, facts_from_nodelist(json.loads(nodes.stdout)))
    manifest = tmp_path / "cluster-policy.yaml"
    manifest.write_text(to_yaml(rendered.documents()))

    applied = kubectl(cluster, "apply", "--server-side", "-f", str(manifest))
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.strip() == "clusterpolicy.nvidia.com/cluster-policy serverside-applied"
    cluster.settle()

    listed = kubectl(
        cluster,
        "get",
        "pods",
        "-n",
        "gpu-operator",
        "-l",
        "app.kubernetes.io/component=nvidia-driver",
        "-o",
        f"jsonpath={JSONPATH}",
    )
    assert listed.returncode == 0, listed.stderr
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in listed.stdout.splitlines()}
    expected = {n.node: n.image for n in rendered.node_images}
    assert sorted(rows) == sorted(expected) == ["gpu-h200-01", "gpu-h200-02"]
    catalog = cluster.sim.puller.catalog["registry.example.com/mlops/nvidia-driver"]
    for node, (image, image_id, phase) in rows.items():
        assert image == expected[node]
        assert image.endswith(":580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5")
        assert image_id == f"registry.example.com/mlops/nvidia-driver@{catalog[image.rsplit(':', 1)[1]]}"
        assert phase == "Running"
