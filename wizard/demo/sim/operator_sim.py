"""The simulated GPU Operator's ClusterPolicy controller (``controllers/clusterpolicy_controller.go``).

The driver's OS tag comes from the *first* GPU node and is used cluster-wide, which gives mixed-OS clusters
wrong images (issue #1622); that bug is reproduced on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.demo.rules.operator_rules import (
    COMMON_DRIVER_DAEMONSET,
    LABEL_GPU_PRESENT,
    LABEL_KERNEL,
    LABEL_OS_ID,
    LABEL_PRECOMPILED,
    NFD,
    OperatorRelease,
    PolicyOS,
    RuleError,
    kernel_os_map,
    mounts_host_lib_modules,
    policy_driver_image,
    policy_os,
    precompiled_daemonset_name,
    repo_config_dirs,
)
from wizard.demo.sim import operands, runtime_operands
from wizard.demo.sim.gpu_labels import DEPLOY_PREFIX, gpu_state_labels
from wizard.demo.sim.operands import OperandError
from wizard.demo.sim.simutil import Writer, is_owned_by, labels_of, read, set_condition, thaw

STATES = ("state-driver", "state-container-toolkit", "state-operator-validation", "state-device-plugin")


@dataclass
class OperatorInfo:
    """The running operator as its Deployment describes it."""

    namespace: str
    release: OperatorRelease
    env: dict[str, str] = field(default_factory=dict)


def find_operator(deployments: list[dict[str, Any]], default_release: str) -> OperatorInfo | None:
    """The GPU Operator Deployment or None when it is not installed: the chart labels it
    ``app.kubernetes.io/component=gpu-operator`` (its pods also ``app=gpu-operator``); older installs ``app``."""
    for dep in deployments:
        labels = labels_of(dep)
        if labels.get("app") != "gpu-operator" and labels.get("app.kubernetes.io/component") != "gpu-operator":
            continue
        containers = dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [{}]
        containers = [c for c in containers if c.get("name") == "gpu-operator"] or containers
        image = str(containers[0].get("image", ""))
        tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
        try:
            release = OperatorRelease.parse(tag)
        except ValueError:
            release = OperatorRelease.parse(default_release)
        env = {e["name"]: str(e.get("value", "")) for e in containers[0].get("env") or [] if "name" in e}
        return OperatorInfo(dep["metadata"].get("namespace", "default"), release, env)
    return None


@dataclass(frozen=True)
class ClusterInit:
    """What the ClusterPolicy controller's init learnt about the GPU nodes."""

    first_gpu_node: dict[str, str] = field(default_factory=dict)
    """Labels of the GPU node the operator listed first (the API lists by name)."""
    os: PolicyOS | None = None
    """``gpuNodeOSRelease`` / ``gpuNodeOSTag`` (v26.3+; v25.10 reads the OS in the driver state)."""
    kernels: dict[str, str] = field(default_factory=dict)
    """``kernelVersionMap``: kernel -> ID + VERSION_ID (precompiled only)."""


def ds_ready(ds: dict[str, Any] | None) -> bool:
    """The operator's readiness test for one DaemonSet: every scheduled pod updated and available."""
    if ds is None:
        return False
    status = ds.get("status") or {}
    if status.get("observedGeneration", 0) < ds["metadata"].get("generation", 1):
        return False
    desired = status.get("desiredNumberScheduled", 0)
    return status.get("numberAvailable", 0) == desired and status.get("updatedNumberScheduled", 0) == desired


class ClusterPolicyController:
    """Reconciles ClusterPolicies into node labels, operand DaemonSets and status."""

    def __init__(self, default_release: str) -> None:
        self.default_release = default_release
        self._operator_host_os = ""
        self.singleton = ""
        """The ClusterPolicy this operator reconciles (``clusterPolicyCtrl.singleton``); later ones are ignored."""

    def reconcile(self, writer: Writer, operator: OperatorInfo) -> None:
        """One pass over every ClusterPolicy (the oldest is reconciled, the rest ignored)."""
        store = writer.store
        policies = sorted(
            read(store, "clusterpolicies"),
            key=lambda cp: (cp["metadata"].get("creationTimestamp", ""), cp["metadata"]["name"]),
        )
        if not policies:
            self.singleton = ""
            return
        if self.singleton not in {cp["metadata"]["name"] for cp in policies}:
            self.singleton = policies[0]["metadata"]["name"]
        policies.sort(key=lambda cp: cp["metadata"]["name"] != self.singleton)
        for extra in policies[1:]:
            extra = thaw(extra)
            status = extra.setdefault("status", {})
            status.update({"state": "ignored", "namespace": operator.namespace})
            writer.update("clusterpolicies", extra)
        policy = policies[0]
        nodes = read(store, "nodes")
        for i, node in enumerate(nodes):
            labels = labels_of(node)
            new = gpu_state_labels(labels)
            if new != labels:
                nodes[i] = node = thaw(node)
                node["metadata"]["labels"] = new
                writer.update("nodes", node)
        gpu_nodes = [n for n in nodes if labels_of(n).get(LABEL_GPU_PRESENT) == "true"]
        has_nfd = any(key.startswith(f"{NFD}/") for n in nodes for key in labels_of(n))
        self._reconcile_policy(writer, operator, policy, gpu_nodes, has_nfd)

    def _reconcile_policy(
        self,
        writer: Writer,
        operator: OperatorInfo,
        policy: dict[str, Any],
        gpu_nodes: list[dict[str, Any]],
        has_nfd: bool,
    ) -> None:
        spec = policy.get("spec") or {}
        try:
            init = self._init(spec, operator, gpu_nodes)
        except RuleError as exc:  # init() failed: ReconcileFailed, no state is applied
            self._set_status(writer, policy, operator, str(exc), [], has_nfd, bool(gpu_nodes))
            return
        if ((spec.get("driver") or {}).get("repoConfig") or {}).get("configMapName"):
            self._operator_host_os = self._operator_host_id(writer, operator)
        existing = {
            ds["metadata"]["name"]: ds
            for ds in read(writer.store, "daemonsets", operator.namespace)
            if is_owned_by(ds, policy["metadata"].get("uid", ""))
        }
        wanted: dict[str, dict[str, Any]] = {}
        not_ready: list[str] = []
        failure = ""
        for state in STATES:
            try:
                rendered = self._render(state, spec, policy, operator, init) if gpu_nodes else []
            except OperandError as exc:
                failure = f"Failed to reconcile {state}: {exc}"
                # Like step() returning an error: later states are not applied, earlier ones stay.
                wanted.update({name: ds for name, ds in existing.items() if name not in wanted})
                break
            applied = [self._apply(writer, ds, existing.get(ds["metadata"]["name"])) for ds in rendered]
            wanted.update({ds["metadata"]["name"]: ds for ds in rendered})
            if not all(ds_ready(ds) for ds in applied):
                not_ready.append(state)
        for name, ds in existing.items():
            if name not in wanted and _deleted_by_operator(ds, spec, bool(gpu_nodes)):
                writer.delete("daemonsets", name, operator.namespace)
        self._set_status(writer, policy, operator, failure, not_ready, has_nfd, bool(gpu_nodes))

    @staticmethod
    def _apply(writer: Writer, ds: dict[str, Any], current: dict[str, Any] | None) -> dict[str, Any] | None:
        if current is None:
            return writer.create("daemonsets", ds)
        merged = {
            **current,
            "metadata": {**current["metadata"], "labels": ds["metadata"]["labels"]},
            "spec": ds["spec"],
        }
        return writer.update("daemonsets", merged)

    @staticmethod
    def _init(spec: dict[str, Any], operator: OperatorInfo, gpu_nodes: list[dict[str, Any]]) -> ClusterInit:
        """``init()``: the first GPU node's OS (v26.3+) and, when precompiled, the kernel map; RuleError stops all."""
        if not gpu_nodes:
            return ClusterInit()
        first = labels_of(sorted(gpu_nodes, key=lambda n: n["metadata"]["name"])[0])
        cluster_os = None
        if operator.release.rules.gpu_node_os_info:
            try:
                cluster_os = policy_os(first, operator.release)
            except RuleError as exc:
                raise RuleError(f"failed to retrieve GPU node OS info: {exc}") from None
        driver = spec.get("driver") or {}
        kernels: dict[str, str] = {}
        if driver.get("enabled", True) is not False and driver.get("usePrecompiled"):
            kernels = kernel_os_map([labels_of(n) for n in gpu_nodes])
        return ClusterInit(first, cluster_os, kernels)

    @staticmethod
    def _operator_host_id(writer: Writer, operator: OperatorInfo) -> str:
        """v25.10 reads ``/host-etc/os-release`` of the node the operator pod runs on (issue #562): its ``ID``."""
        if operator.release.rules.gpu_node_os_info:
            return ""
        nodes = {n["metadata"]["name"]: n for n in read(writer.store, "nodes")}
        host = next(
            (
                (p.get("spec") or {}).get("nodeName") or ""
                for p in read(writer.store, "pods", operator.namespace)
                if labels_of(p).get("app") == "gpu-operator"
            ),
            "",
        )
        node = nodes.get(host) or (nodes[min(nodes)] if nodes else {})
        return labels_of(node).get(LABEL_OS_ID, "") if node else ""

    def _render(
        self,
        state: str,
        spec: dict[str, Any],
        policy: dict[str, Any],
        operator: OperatorInfo,
        init: ClusterInit,
    ) -> list[dict[str, Any]]:
        ns, env = operator.namespace, operator.env
        if state == "state-driver":
            driver = spec.get("driver") or {}
            if driver.get("enabled", True) is False or driver.get("useNvidiaDriverCRD"):
                return []
            return self._driver_daemonsets(driver, spec, policy, operator, init)
        validator_image = operands.operand_image(spec.get("validator") or {}, "VALIDATOR_IMAGE", env)
        if state == "state-container-toolkit":
            section = spec.get("toolkit") or {}
            if section.get("enabled", True) is False:
                return []
            image = operands.operand_image(section, "CONTAINER_TOOLKIT_IMAGE", env)
            return [
                runtime_operands.toolkit_daemonset(
                    namespace=ns, image=image, validator_image=validator_image, owner=policy, spec=spec
                )
            ]
        if state == "state-operator-validation":
            return [runtime_operands.validator_daemonset(namespace=ns, image=validator_image, owner=policy, spec=spec)]
        section = spec.get("devicePlugin") or {}
        if section.get("enabled", True) is False:
            return []
        image = operands.operand_image(section, "DEVICE_PLUGIN_IMAGE", env)
        return [
            runtime_operands.device_plugin_daemonset(
                namespace=ns, image=image, validator_image=validator_image, owner=policy
            )
        ]

    def _driver_daemonsets(
        self,
        driver: dict[str, Any],
        spec: dict[str, Any],
        policy: dict[str, Any],
        operator: OperatorInfo,
        init: ClusterInit,
    ) -> list[dict[str, Any]]:
        release = operator.release
        try:
            cluster_os = init.os or policy_os(init.first_gpu_node, release)  # v25.10: kernelFullVersion
        except RuleError as exc:
            raise OperandError(str(exc)) from None
        manager_image = operands.operand_image(driver.get("manager") or {}, "DRIVER_MANAGER_IMAGE", operator.env)
        repository, image, version = (str(driver.get(k) or "") for k in ("repository", "image", "version"))
        precompiled = bool(driver.get("usePrecompiled"))
        repo_config = str((driver.get("repoConfig") or {}).get("configMapName") or "")
        # The asset's labels on the DaemonSet; spec.daemonsets.labels only on its pods (applyCommonDaemonsetMetadata).
        labels = {
            "app": COMMON_DRIVER_DAEMONSET,
            LABEL_PRECOMPILED: "true" if precompiled else "false",
            "app.kubernetes.io/component": operands.COMPONENT_DRIVER,
        }
        daemonset_labels = (spec.get("daemonsets") or {}).get("labels") or {}
        pod_labels = {
            str(k): str(v) for k, v in daemonset_labels.items() if k not in ("app", "app.kubernetes.io/part-of")
        }
        common: dict[str, Any] = {
            "namespace": operator.namespace,
            "manager_image": manager_image,
            "owner": policy,
            "driver": driver,
            "precompiled": precompiled,
            "pod_labels": pod_labels,
        }

        def image_for(kernel: str) -> str:
            try:
                return policy_driver_image(
                    repository,
                    image,
                    version,
                    precompiled=precompiled,
                    kernel=kernel,
                    os_tag=cluster_os.tag,
                    env_value=operator.env.get("DRIVER_IMAGE", ""),
                )
            except RuleError as exc:
                raise OperandError(str(exc)) from None

        if not precompiled:
            repo_dir = ""
            if repo_config:
                os_id = cluster_os.os_id if release.rules.gpu_node_os_info else self._operator_host_os
                repo_dir = repo_config_dirs(release).get(os_id, "")
                if not repo_dir:
                    why = (
                        f"repository configuration not supported for distribution {cluster_os.tag}"
                        if release.rules.gpu_node_os_info
                        else "distribution not supported"
                    )
                    raise OperandError(f"ERROR: failed to get destination directory for custom repo config: {why}")
            return [
                operands.driver_daemonset(
                    name=COMMON_DRIVER_DAEMONSET,
                    labels=labels,
                    node_selector={f"{DEPLOY_PREFIX}driver": "true"},
                    image=image_for(""),
                    repo_config=repo_config,
                    repo_config_dir=repo_dir,
                    **common,
                )
            ]
        lib_modules = mounts_host_lib_modules(release, precompiled=True, os_id=cluster_os.os_id)
        # transformPrecompiledDriverDaemonset: the name takes the kernel's own ID + VERSION_ID, the image
        # the cluster-wide OS tag, and app=nvidia-driver-daemonset stays on every per-kernel DaemonSet.
        return [
            operands.driver_daemonset(
                name=precompiled_daemonset_name(kernel, node_os),
                labels=labels,
                node_selector={f"{DEPLOY_PREFIX}driver": "true", LABEL_KERNEL: kernel},
                image=image_for(kernel),
                host_lib_modules=lib_modules,
                **common,
            )
            for kernel, node_os in sorted(init.kernels.items())
        ]

    @staticmethod
    def _set_status(
        writer: Writer,
        policy: dict[str, Any],
        operator: OperatorInfo,
        failure: str,
        not_ready: list[str],
        has_nfd: bool,
        has_gpu: bool,
    ) -> None:
        current = writer.store.get("clusterpolicies", policy["metadata"]["name"])
        if current is None:
            return
        status = current.setdefault("status", {})
        conditions = status.setdefault("conditions", [])
        status["namespace"] = operator.namespace
        if failure or not_ready:
            status["state"] = "notReady"
            reason = "ReconcileFailed" if failure else "OperandNotReady"
            message = failure or f"ClusterPolicy is not ready, states not ready: [{' '.join(not_ready)}]"
            set_condition(conditions, "Ready", "False", "Error")
            set_condition(conditions, "Error", "True", reason, message)
        else:
            status["state"] = "ready"
            if not has_nfd:
                reason, message = "NFDLabelsMissing", "No NFD labels found"
            elif not has_gpu:
                reason, message = "NoGPUNodes", "No GPU node found, watching for new nodes to join the cluster."
            else:
                reason, message = (
                    "Reconciled",
                    "ClusterPolicy is ready as all resources have been successfully reconciled",
                )
            set_condition(conditions, "Ready", "True", reason, message)
            set_condition(conditions, "Error", "False", "Ready")
        writer.update("clusterpolicies", current)


def _deleted_by_operator(ds: dict[str, Any], spec: dict[str, Any], has_gpu_nodes: bool) -> bool:
    """Whether the operator deletes an owned DaemonSet no state renders any more (``controllers/object_controls.go``)."""
    name = ds["metadata"]["name"]
    if not name.startswith(COMMON_DRIVER_DAEMONSET):
        return True
    driver = spec.get("driver") or {}
    if driver.get("useNvidiaDriverCRD"):  # cleanupAllDriverDaemonSets
        return True
    if driver.get("enabled", True) is False:  # the state-disabled branch of DaemonSet()
        return bool(name == COMMON_DRIVER_DAEMONSET)
    if not has_gpu_nodes:  # DaemonSet() returns before its cleanup
        return False
    label = labels_of(ds).get(LABEL_PRECOMPILED)
    if driver.get("usePrecompiled"):  # cleanupStalePrecompiledDaemonsets
        if label == "false":
            return True
        status = ds.get("status") or {}
        return label == "true" and not status.get("desiredNumberScheduled") and not status.get("numberMisscheduled")
    return label == "true"  # cleanupUnusedDriverDaemonSets
