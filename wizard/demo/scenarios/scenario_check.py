"""The rules of a scenario file that span its fields, and nodes read back from a NodeList."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wizard.demo.rules.nodeinfo import read_node
from wizard.demo.rules.operator_rules import OperatorRelease, bundled_releases
from wizard.demo.rules.runtime_layout import FLAVOURS, default_versions

if TYPE_CHECKING:
    from wizard.demo.scenarios.scenario import NodeSpec, Scenario

DIGEST_RE = re.compile(r"^sha256:[a-f0-9]{64}$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_URL_RE = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?/?$")
_ARCHES = ("amd64", "arm64")
#: A DNS subdomain name (RFC 1123), what the API server accepts for a node or namespace name.
LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", re.ASCII)
LABEL_VALUE_RULE = "a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric)"
"""The API server's own rule for label values: a real one refuses a node that breaks it."""


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and LABEL_VALUE_RE.fullmatch(value) is not None


K8S_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""

    def __init__(self, message: str, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.loc = loc
        """Where in the document the field is (``("nodes", 0, "gpu_count")``), when known."""


def _check_nodes(scenario: Scenario, where: str) -> set[str]:
    names: set[str] = set()
    for i, spec in enumerate(scenario.nodes):
        at = f"nodes[{i}]"
        if not K8S_NAME_RE.match(spec.name) or len(spec.name) > 253:
            raise ScenarioError(f"{where}: {at}.name: {spec.name!r} is not a node name (lower-case, digits, - .)")
        if spec.count < 1:
            raise ScenarioError(f"{where}: {at}.count: must be 1 or more, not {spec.count}")
        if spec.arch not in _ARCHES:
            raise ScenarioError(f"{where}: {at}.arch: {spec.arch!r} is not one of {', '.join(_ARCHES)}")
        for key in ("os_id", "os_version", "kernel"):
            if not getattr(spec, key).strip():
                raise ScenarioError(f"{where}: {at}.{key}: must not be empty")
        # a real API server refuses a label value outside Kubernetes' grammar; nodeInfo (nfd: false) is free text
        labelled = {"gpu_product": spec.gpu_product, **{f"labels.{k}": v for k, v in spec.labels.items()}}
        if spec.nfd:
            labelled |= {"kernel": spec.kernel, "os_id": spec.os_id, "os_version": spec.os_version}
        for key, value in labelled.items():
            if not is_label_value(value):
                raise ScenarioError(f"{where}: {at}.{key}: {value!r} is not {LABEL_VALUE_RULE}")
        if spec.gpu_count < 0:
            raise ScenarioError(f"{where}: {at}.gpu_count: must not be negative")
        if spec.gpu_product and spec.gpu_count == 0:
            raise ScenarioError(f"{where}: {at}.gpu_count: must be 1 or more when gpu_product is set")
        if spec.gpu_count and not spec.gpu_product:
            raise ScenarioError(f"{where}: {at}.gpu_product: required when gpu_count is set (e.g. NVIDIA-H200)")
        if spec.mig_profile and not re.fullmatch(r"[1-8]g\.\d{1,3}gb", spec.mig_profile):
            raise ScenarioError(f"{where}: {at}.mig_profile: {spec.mig_profile!r} is not a MIG profile like 1g.6gb")
        if bool(spec.mig_profile) != (spec.mig_per_gpu > 0) or not 0 <= spec.mig_per_gpu <= 7:
            raise ScenarioError(f"{where}: {at}.mig_per_gpu: 1 to 7 MIG devices per GPU, given with mig_profile")
        if spec.mig_profile and not spec.gpu:
            raise ScenarioError(f"{where}: {at}.mig_profile: only a GPU node can be split into MIG devices")
        if (spec.host_driver or spec.host_driver_broken) and not spec.gpu:
            raise ScenarioError(f"{where}: {at}.host_driver: only a GPU node can have a host driver")
        if spec.host_driver and not re.match(r"^\d+\.\d+(\.\d+)?$", spec.host_driver):
            raise ScenarioError(f"{where}: {at}.host_driver: {spec.host_driver!r} is not a version like 580.126.20")
        check_runtime_flavour(spec, f"{where}: {at}")
        if "://" not in spec.runtime:
            raise ScenarioError(f"{where}: {at}.runtime: {spec.runtime!r} must look like containerd://1.7.23")
        for mount in spec.noexec_mounts:
            if not mount.startswith("/"):
                raise ScenarioError(f"{where}: {at}.noexec_mounts: {mount!r} is not an absolute path")
    for spec in scenario.expanded_nodes():
        if spec.name in names:
            raise ScenarioError(f"{where}: nodes: node name {spec.name!r} appears twice")
        names.add(spec.name)
    return names


def check_runtime_flavour(spec: NodeSpec, at: str) -> None:
    """``runtime_flavour`` is a known distribution; it fills the version strings the file left at their defaults."""
    if not spec.runtime_flavour:
        return
    if spec.runtime_flavour not in FLAVOURS:
        raise ScenarioError(f"{at}.runtime_flavour: {spec.runtime_flavour!r} is not one of {', '.join(FLAVOURS)}")
    runtime, kubelet = default_versions(spec.runtime_flavour)
    plain_runtime, plain_kubelet = default_versions("containerd")  # NodeSpec's own defaults
    if spec.runtime == plain_runtime:
        spec.runtime = runtime
    if spec.kubelet_version == plain_kubelet:
        spec.kubelet_version = kubelet


def _check_registry(scenario: Scenario, where: str) -> None:
    registry = scenario.registry
    if registry.url and not _URL_RE.match(registry.url):
        raise ScenarioError(f"{where}: registry.url: {registry.url!r} must look like http://127.0.0.1:5055")
    for repo, tags in registry.catalog.items():
        host, _, rest = repo.partition("/")
        if not rest or not ("." in host or ":" in host or host == "localhost"):
            raise ScenarioError(
                f"{where}: registry.catalog.{repo}: key must be host/path/image "
                "(e.g. registry.example.com/mlops/nvidia-driver)"
            )
        for tag, digest in tags.items():
            if not _TAG_RE.match(tag):
                raise ScenarioError(f"{where}: registry.catalog.{repo}.{tag}: not a valid image tag")
            if not DIGEST_RE.match(digest):
                raise ScenarioError(
                    f"{where}: registry.catalog.{repo}.{tag}: {digest!r} is not sha256: + 64 hex digits"
                )


def check_scenario(scenario: Scenario, where: str) -> None:
    """Rules spanning fields; raises ScenarioError naming the field."""
    if not K8S_NAME_RE.match(scenario.name):
        raise ScenarioError(f"{where}: name: {scenario.name!r} must be lower-case letters, digits and -")
    op = scenario.operator
    try:
        release = OperatorRelease.parse(op.release)
    except ValueError:
        release = None
    if release is None or f"{release.major}.{release.minor}" not in bundled_releases():
        raise ScenarioError(
            f"{where}: operator.release: {op.release!r} is not a known release; valid: "
            f"{', '.join(bundled_releases().values())}"
        )
    if not K8S_NAME_RE.match(op.namespace) or "." in op.namespace:
        raise ScenarioError(f"{where}: operator.namespace: {op.namespace!r} is not a namespace name")
    if op.cluster_policy is not None:
        if not op.installed:
            raise ScenarioError(f"{where}: operator.cluster_policy: needs operator.installed: true")
        if op.cluster_policy.get("kind") != "ClusterPolicy" or not isinstance(op.cluster_policy.get("spec"), dict):
            raise ScenarioError(f"{where}: operator.cluster_policy: must be a ClusterPolicy object with a spec")
    if op.helm_values is not None and not op.installed:
        raise ScenarioError(f"{where}: operator.helm_values: needs operator.installed: true")
    names = _check_nodes(scenario, where)
    _check_registry(scenario, where)
    faults = scenario.faults
    for key in ("error_rate", "drop_rate"):
        if not 0.0 <= getattr(faults, key) <= 1.0:
            raise ScenarioError(f"{where}: faults.{key}: must be between 0 and 1")
    for node in faults.exec_fail_nodes:
        if node not in names:
            raise ScenarioError(f"{where}: faults.exec_fail_nodes: {node!r} is not a node of this scenario")
    for i, workload in enumerate(scenario.workloads):
        if workload.node not in names:
            raise ScenarioError(f"{where}: workloads[{i}].node: {workload.node!r} is not a node of this scenario")
        if workload.gpus < 0:
            raise ScenarioError(f"{where}: workloads[{i}].gpus: must be 0 or more")
    _check_upgrade(scenario, names, where)
    for i, rule in enumerate(scenario.rbac_deny):
        if not rule.get("verb") or not rule.get("resource"):
            raise ScenarioError(f"{where}: rbac_deny[{i}]: needs verb and resource")


UPGRADE_STATES = (
    "upgrade-required",
    "cordon-required",
    "wait-for-jobs-required",
    "pod-deletion-required",
    "drain-required",
    "pod-restart-required",
    "validation-required",
    "uncordon-required",
    "upgrade-done",
    "upgrade-failed",
)


def _check_upgrade(scenario: Scenario, names: set[str], where: str) -> None:
    upgrade = scenario.upgrade
    if not upgrade.to_version and not upgrade.states:
        return
    if not upgrade.to_version or scenario.operator.cluster_policy is None:
        raise ScenarioError(f"{where}: upgrade.to_version: needs a version and an operator.cluster_policy to upgrade")
    for node, state in upgrade.states.items():
        if node not in names:
            raise ScenarioError(f"{where}: upgrade.states.{node}: not a node of this scenario")
        if state not in UPGRADE_STATES:
            raise ScenarioError(f"{where}: upgrade.states.{node}: {state!r} is not one of {', '.join(UPGRADE_STATES)}")
    if upgrade.state_seconds < 0:
        raise ScenarioError(f"{where}: upgrade.state_seconds: must be 0 or more")


def nodes_from_nodelist(document: Any, where: str) -> list[dict[str, Any]]:
    """NodeSpec fields for each node of a NodeList (``kubectl get nodes -o json``)."""
    if isinstance(document, Mapping) and document.get("kind") == "Node":
        items: Any = [document]
    else:
        items = document.get("items") if isinstance(document, Mapping) else None
    if not isinstance(items, list):
        raise ScenarioError(f"{where}: not a NodeList (no 'items' list)")
    out = []
    for i, node in enumerate(items):
        if not isinstance(node, Mapping):
            raise ScenarioError(f"{where}: items[{i}] is not a Node object")
        node_read = read_node(node)
        if not node_read.name or not node_read.kernel or not node_read.os_id:
            raise ScenarioError(f"{where}: items[{i}] lacks a name, kernel or recognisable OS")
        out.append(
            {
                "name": node_read.name,
                "os_id": node_read.os_id,
                "os_version": node_read.os_version,
                "os_image": node_read.os_image,
                "kernel": node_read.kernel,
                "arch": node_read.arch,
                "gpu_product": node_read.gpu_product if node_read.gpu else "",
                "gpu_count": max(node_read.gpu_count, 1) if node_read.gpu and node_read.gpu_product else 0,
                "nfd": node_read.kernel_from_nfd,
                "runtime": node_read.runtime or "containerd://1.7.23",
                "kubelet_version": node_read.kubelet_version,
                "labels": dict(node_read.labels),
            }
        )
    return out
