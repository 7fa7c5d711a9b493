"""What a scenario installs before the simulation runs: nodes, namespaces, pods, the operator and ClusterPolicy."""

from __future__ import annotations

from typing import Any

from wizard.bundled import operator_values
from wizard.demo.api.store import Store
from wizard.demo.rules.operator_rules import bundle_of, bundled_releases
from wizard.demo.rules.release_data import data_of
from wizard.demo.scenarios.scenario import NodeSpec, Scenario, WorkloadSpec
from wizard.demo.sim.helm_release import release_secret
from wizard.demo.sim.nodes import node_object
from wizard.demo.sim.operands import ENV_NAMES


def operator_deployment(scenario: Scenario) -> dict[str, Any]:
    """The GPU Operator Deployment as Helm installs it, with each operand's default image in its env."""
    spec = scenario.operator
    values = operator_values(bundle_of(spec.release))
    repo = spec.repository or "nvcr.io/nvidia"

    def default(section: dict[str, Any], version: str | None = None) -> str:
        base = section.get("repository", "nvcr.io/nvidia")
        if spec.repository:  # a mirror keeps the path below the registry's namespace
            base = repo + base.removeprefix("nvcr.io/nvidia")
        return f"{base}/{section['image']}:{version or section.get('version') or spec.release}"

    env = {
        ENV_NAMES["driver"]: default(values["driver"]),
        ENV_NAMES["manager"]: default(values["driver"]["manager"]),
        ENV_NAMES["toolkit"]: default(values["toolkit"]),
        ENV_NAMES["validator"]: default(values["validator"], spec.release),
        ENV_NAMES["devicePlugin"]: default(values["devicePlugin"]),
    }
    labels = {
        "app": "gpu-operator",
        "app.kubernetes.io/component": "gpu-operator",
        "app.kubernetes.io/managed-by": "Helm",
    }
    container = {
        "name": "gpu-operator",
        "image": f"{repo}/gpu-operator:{spec.release}",
        "imagePullPolicy": "IfNotPresent",
        "command": ["gpu-operator"],
        "args": ["--leader-elect", "--zap-time-encoding=epoch", "--zap-log-level=info"],
        "env": [
            {"name": "WATCH_NAMESPACE", "value": ""},
            {"name": "OPERATOR_NAMESPACE", "value": spec.namespace},
            *({"name": k, "value": v} for k, v in env.items()),
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": spec.namespace, "labels": dict(labels)},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "gpu-operator"}},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "serviceAccountName": "gpu-operator",
                    "priorityClassName": "system-node-critical",
                    "containers": [container],
                    "nodeSelector": {},
                },
            },
        },
    }


def published_images(scenario: Scenario) -> list[str]:
    """The images every bundled chart names but the driver's, at NVIDIA's registries and at the scenario's mirror
    (``operator.repository``), which keeps each image's path below its public host as an air-gap copy does."""
    refs = []
    mirror = scenario.operator.repository
    registry = mirror.removesuffix("/nvidia") if mirror.endswith("/nvidia") else mirror
    for bundle in bundled_releases().values():
        for reference in data_of(bundle).images:
            if reference.split("/", 1)[1].startswith("driver:"):
                continue
            refs.append(reference)
            if mirror:
                refs.append(f"{registry}/{reference.split('/', 1)[1]}")
    return refs


def workload_pod(spec: WorkloadSpec) -> dict[str, Any]:
    """A user's pod bound to its node; the kubelet starts it like any other (its image is in the catalog)."""
    resources = {"limits": {"nvidia.com/gpu": str(spec.gpus)}} if spec.gpus else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": {"app": spec.name}},
        "spec": {
            "nodeName": spec.node,
            "restartPolicy": "Always",
            "containers": [{"name": "main", "image": spec.image, "resources": resources}],
        },
    }


def install_scenario(store: Store, scenario: Scenario, specs: list[NodeSpec]) -> bool:
    """Put the scenario's nodes, namespaces and workloads into the store, then its operator and existing
    ClusterPolicy when it has one installed; whether it has (the operator's objects were created)."""
    for index, spec in enumerate(specs):
        store.create("nodes", node_object(spec, index))
    names = ["default", "kube-system", "kube-public", "kube-node-lease", scenario.operator.namespace]
    names += [w.namespace for w in scenario.workloads]
    for name in dict.fromkeys(names):
        if store.get("namespaces", name) is None:
            store.create(
                "namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
    for workload in scenario.workloads:
        store.create("pods", workload_pod(workload))
    if not scenario.operator.installed:
        return False
    store.create("deployments", operator_deployment(scenario))
    if scenario.operator.cluster_policy:
        policy = dict(scenario.operator.cluster_policy)
        policy.setdefault("apiVersion", "nvidia.com/v1")
        store.create("clusterpolicies", policy)
    operator = scenario.operator
    if operator.helm_values is not None:  # installed by Helm: its release record
        notes = ((operator.cluster_policy or {}).get("metadata") or {}).get("annotations") or {}
        name = str(notes.get("meta.helm.sh/release-name") or "gpu-operator")
        store.create("secrets", release_secret(name, operator.namespace, operator.release, dict(operator.helm_values)))
    return True
