"""The host probe's node selection (`wizard.cluster.probes.probenodes`): exactly the nodes asked for, in one label
term where a GPU label describes them (the real DaemonSet controller parses every term for every node on
each sync: 5,000 one-node terms took it 10 minutes to place the probe's pods), else one term per node.

Each selection is checked against the demo's reading of node affinity (`wizard.demo.sim.placement`, the
rules the real scheduler and DaemonSet controller apply), so "exactly" is measured, not assumed; and the
probe itself is run through the demo over HTTPS at 120 GPU nodes with the label term.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from tests.helpers.cluster import connected, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.probes.hostprobe import HostRun, run_on_hosts
from wizard.cluster.probes.probenodes import EXCLUDE_MAX, HOSTNAME, NAMED_MAX, node_terms
from wizard.demo.sim.placement import fits
from wizard.engine.facts import LABEL_GPU_PRESENT, PCI_NVIDIA_LABELS
from wizard.engine.nodescript import Step

PCI = PCI_NVIDIA_LABELS[0]


def _cluster(gpu: int, cpu: int = 3, *, present: bool = False) -> dict[str, dict[str, str]]:
    labels: dict[str, dict[str, str]] = {}
    for i in range(gpu):
        name = f"gpu-{i:04d}"
        labels[name] = {HOSTNAME: name, PCI: "true", "kubernetes.io/os": "linux"}
        if present:
            labels[name][LABEL_GPU_PRESENT] = "true"
    for i in range(cpu):
        labels[f"cpu-{i}"] = {HOSTNAME: f"cpu-{i}", "kubernetes.io/os": "linux"}
    return labels


def _selected(terms: list[dict[str, Any]], labels: dict[str, dict[str, str]]) -> set[str]:
    """The nodes the terms select, by the demo's reading of required node affinity."""
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    }
    return {name for name, own in labels.items() if fits({"metadata": {"name": name, "labels": own}}, spec)}


def test_every_gpu_node_is_one_label_term() -> None:
    labels = _cluster(500)
    wanted = [n for n in labels if n.startswith("gpu-")]
    terms = node_terms(wanted, labels)
    assert terms == [{"matchExpressions": [{"key": PCI, "operator": "In", "values": ["true"]}]}]
    assert _selected(terms, labels) == set(wanted)


def test_gpu_present_is_preferred_when_both_describe_the_nodes() -> None:
    labels = _cluster(100, present=True)
    wanted = [n for n in labels if n.startswith("gpu-")]
    (term,) = node_terms(wanted, labels)
    assert term["matchExpressions"][0]["key"] == LABEL_GPU_PRESENT


def test_a_few_gpu_nodes_left_out_are_excluded_by_hostname() -> None:
    labels = _cluster(200)
    left_out = ["gpu-0007", "gpu-0150"]
    wanted = [n for n in labels if n.startswith("gpu-") and n not in left_out]
    (term,) = node_terms(wanted, labels)
    assert term["matchExpressions"][1] == {"key": HOSTNAME, "operator": "NotIn", "values": left_out}
    assert _selected([term], labels) == set(wanted)


@pytest.mark.parametrize(
    "case",
    ["few", "half", "no-hostname", "shared-hostname", "mixed-values", "unknown-node", "no-labels", "cpu-nodes"],
)
def test_otherwise_each_node_is_named_and_still_exactly_selected(case: str) -> None:
    labels = _cluster(200)
    wanted = [n for n in labels if n.startswith("gpu-")]
    if case == "few":
        wanted = wanted[:NAMED_MAX]
    elif case == "half":
        wanted = wanted[: len(wanted) - EXCLUDE_MAX - 1]  # more left out than hostnames are worth listing
    elif case == "no-hostname":
        wanted = wanted[1:]
        del labels["gpu-0000"][HOSTNAME]  # the node to leave out cannot be named by label
    elif case == "shared-hostname":
        wanted = wanted[1:]
        labels["gpu-0000"][HOSTNAME] = "gpu-0001"  # excluding it would exclude a node to probe
    elif case == "mixed-values":
        labels["gpu-0003"][PCI] = "True"
    elif case == "unknown-node":
        wanted.append("joined-after-discovery")  # asked for, but not in the labels discovery listed
    elif case == "cpu-nodes":
        wanted = [*wanted, "cpu-0"]
    terms = node_terms(wanted, None if case == "no-labels" else labels)
    assert all("matchFields" in t for t in terms) and len(terms) == len(wanted)
    assert _selected(terms, {**labels, "joined-after-discovery": {}}) == set(wanted)


def test_random_subsets_are_selected_exactly() -> None:
    chooser = random.Random(24)
    for _ in range(40):
        labels = _cluster(chooser.randint(70, 300), chooser.randint(0, 5), present=chooser.random() < 0.5)
        gpu = [n for n in labels if n.startswith("gpu-")]
        wanted = chooser.sample(gpu, len(gpu) - chooser.randint(0, 80))
        terms = node_terms(wanted, labels)
        assert _selected(terms, labels) == set(wanted)


async def test_the_probe_selects_120_gpu_nodes_by_label_on_the_demo(demo_cluster: ClusterFactory) -> None:
    """Through the demo's API server, DaemonSet controller and kubelets: every GPU node answers, the
    DaemonSet said one label term, and no other node ran a probe pod."""
    spec = scenario("noexec-run")
    control, gpu_spec = spec.nodes
    spec.nodes = [control, dataclasses.replace(gpu_spec, count=120)]
    demo = demo_cluster(spec)
    bodies: list[dict[str, Any]] = []
    async with connected(demo) as cluster:
        facts = await cluster.discover()
        gpu = sorted(n.name for n in facts.gpu_nodes)
        assert len(gpu) == 120
        gateway_create = cluster.gateway.create_daemonset

        async def recording(namespace: str, body: dict[str, Any]) -> dict[str, Any]:
            bodies.append(body)
            return await gateway_create(namespace, body)

        cluster.gateway.create_daemonset = recording  # type: ignore[method-assign]
        step = [Step("hostname", ("cat", "/etc/hostname"), host=True)]
        runs = [
            r
            async for r in run_on_hosts(
                cluster.gateway,
                gpu,
                step,
                namespace="gpu-operator",
                image="nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0",
                node_labels=facts.labels_by_node(),
            )
        ]
    assert sorted(r.node for r in runs if isinstance(r, HostRun) and r.ran) == gpu
    (body,) = bodies
    terms = body["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert [list(t) for t in terms["nodeSelectorTerms"]] == [["matchExpressions"]]
