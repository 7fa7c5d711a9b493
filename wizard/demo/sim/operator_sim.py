"""The simulated GPU Operator's ClusterPolicy controller.

Reconciles the oldest ClusterPolicy the way ``controllers/clusterpolicy_controller.go`` does: GPU
node labels (``addGPUStateLabels``), then the states driver, container toolkit, operator validation
and device plugin in order, each rendered to DaemonSets (``operands.py``), then ``status`` with the
operator's conditions and messages. Under ClusterPolicy the driver's OS tag comes from the *first*
GPU node and is used cluster-wide, which gives mixed-OS clusters wrong images (issue #1622); that bug
is reproduced on purpose. Image names come from ``wizard.engine.naming``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.demo.sim import operands
from wizard.demo.sim.operands import OperandError
from wizard.demo.sim.simutil import Writer, is_owned_by, labels_of, read, set_condition, thaw
from wizard.engine.facts import LABEL_GPU_PRESENT, LABEL_KERNEL, LABEL_OS_ID, LABEL_OS_VERSION, NFD, PCI_NVIDIA_LABELS
from wizard.engine.naming import (
    COMMON_DRIVER_DAEMONSET,
    DIGEST_PREFIX,
    Release,
    driver_image,
    os_tag,
    precompiled_daemonset_name,
)

DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
DEPLOY_OPERANDS = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
)
STATES = ("state-driver", "state-container-toolkit", "state-operator-validation", "state-device-plugin")


@dataclass
class OperatorInfo:
    """The running operator as its Deployment describes it."""

    namespace: str
    release: Release
    env: dict[str, str] = field(default_factory=dict)


def find_operator(deployments: list[dict[str, Any]], default_release: str) -> OperatorInfo | None:
    """The GPU Operator Deployment (label ``app=gpu-operator``) or None when it is not installed."""
    for dep in deployments:
        if labels_of(dep).get("app") != "gpu-operator":
            continue
        containers = dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [{}]
        image = str(containers[0].get("image", ""))
        tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
        try:
            release = Release.parse(tag)
        except ValueError:
            release = Release.parse(default_release)
        env = {e["name"]: str(e.get("value", "")) for e in containers[0].get("env") or [] if "name" in e}
        return OperatorInfo(dep["metadata"].get("namespace", "default"), release, env)
    return None


def is_gpu_node(labels: dict[str, str]) -> bool:
    """NFD saw an NVIDIA PCI device (what makes the operator set ``nvidia.com/gpu.present=true``)."""
    return any(labels.get(key) == "true" for key in PCI_NVIDIA_LABELS)


def gpu_state_labels(labels: dict[str, str]) -> dict[str, str]:
    """``addGPUStateLabels``/``removeGPUStateLabels``: the node's labels after the operator's pass."""
    new = dict(labels)
    if is_gpu_node(labels):
        new[LABEL_GPU_PRESENT] = "true"
        if labels.get(f"{DEPLOY_PREFIX}operands") == "false":
            for operand in DEPLOY_OPERANDS:
                new.pop(DEPLOY_PREFIX + operand, None)
        else:
            for operand in DEPLOY_OPERANDS:
                if not new.get(DEPLOY_PREFIX + operand):  # a non-empty value (pre-installed) is kept
                    new[DEPLOY_PREFIX + operand] = "true"
    elif labels.get(LABEL_GPU_PRESENT) == "true":
        new[LABEL_GPU_PRESENT] = "false"
        for operand in DEPLOY_OPERANDS:
            new.pop(DEPLOY_PREFIX + operand, None)
    return new


def node_tag_os(labels: dict[str, str], release: Release) -> str:
    """The OS tag the operator derives from a node's NFD labels, or "" without them."""
    os_id, version = labels.get(LABEL_OS_ID, ""), labels.get(LABEL_OS_VERSION, "")
    return os_tag(os_id, version, release) if os_id and version else ""


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
                rendered = self._render(state, spec, policy, operator, gpu_nodes) if gpu_nodes else []
            except OperandError as exc:
                failure = f"Failed to reconcile {state}: {exc}"
                # Like step() returning an error: later states are not applied, earlier ones stay.
                wanted.update({name: ds for name, ds in existing.items() if name not in wanted})
                break
            applied = [self._apply(writer, ds, existing.get(ds["metadata"]["name"])) for ds in rendered]
            wanted.update({ds["metadata"]["name"]: ds for ds in rendered})
            if not all(ds_ready(ds) for ds in applied):
                not_ready.append(state)
        for name in existing:
            if name not in wanted:
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

    def _render(
        self,
        state: str,
        spec: dict[str, Any],
        policy: dict[str, Any],
        operator: OperatorInfo,
        gpu_nodes: list[dict[str, Any]],
    ) -> list[dict[str, Any]]:
        ns, env = operator.namespace, operator.env
        if state == "state-driver":
            driver = spec.get("driver") or {}
            if driver.get("enabled", True) is False or driver.get("useNvidiaDriverCRD"):
                return []
            return self._driver_daemonsets(driver, policy, operator, gpu_nodes)
        validator_image = operands.operand_image(spec.get("validator") or {}, "VALIDATOR_IMAGE", env)
        if state == "state-container-toolkit":
            section = spec.get("toolkit") or {}
            if section.get("enabled", True) is False:
                return []
            image = operands.operand_image(section, "CONTAINER_TOOLKIT_IMAGE", env)
            return [
                operands.toolkit_daemonset(
                    namespace=ns, image=image, validator_image=validator_image, owner=policy, spec=spec
                )
            ]
        if state == "state-operator-validation":
            return [operands.validator_daemonset(namespace=ns, image=validator_image, owner=policy, spec=spec)]
        section = spec.get("devicePlugin") or {}
        if section.get("enabled", True) is False:
            return []
        image = operands.operand_image(section, "DEVICE_PLUGIN_IMAGE", env)
        return [
            operands.device_plugin_daemonset(namespace=ns, image=image, validator_image=validator_image, owner=policy)
        ]

    def _driver_daemonsets(
        self, driver: dict[str, Any], policy: dict[str, Any], operator: OperatorInfo, gpu_nodes: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        release = operator.release
        first = sorted(gpu_nodes, key=lambda n: n["metadata"]["name"])[0]
        first_labels = labels_of(first)
        cluster_tag = node_tag_os(first_labels, release)  # getGPUNodeOSInfo: the first GPU node, cluster-wide
        if not cluster_tag:
            raise OperandError(
                f"unable to get OS info: node {first['metadata']['name']} has no {LABEL_OS_ID} / {LABEL_OS_VERSION} labels"
            )
        cluster_os_id = first_labels[LABEL_OS_ID]
        manager_image = operands.operand_image(driver.get("manager") or {}, "DRIVER_MANAGER_IMAGE", operator.env)
        repository = str(driver.get("repository") or "")
        image = str(driver.get("image") or "")
        version = str(driver.get("version") or "")
        if not (repository or image or version):
            image = operator.env.get("DRIVER_IMAGE", "")
            if not image:
                raise OperandError("empty image path provided through both ClusterPolicy CR and ENV DRIVER_IMAGE")
        else:
            operands.operand_image(driver, "DRIVER_IMAGE", operator.env)  # the all-three-set rule
        precompiled = bool(driver.get("usePrecompiled"))
        repo_config = str((driver.get("repoConfig") or {}).get("configMapName") or "")
        base_labels = {
            "app.kubernetes.io/component": operands.COMPONENT_DRIVER,
            "app.kubernetes.io/managed-by": "gpu-operator",
            "helm.sh/chart": "gpu-operator",
            "nvidia.com/precompiled": "true" if precompiled else "false",
        }
        common: dict[str, Any] = {
            "namespace": operator.namespace,
            "manager_image": manager_image,
            "owner": policy,
            "driver": driver,
            "os_id": cluster_os_id,
            "precompiled": precompiled,
        }
        if not precompiled:
            if repo_config and cluster_os_id not in operands.REPO_CONFIG_DIRS:
                raise OperandError(f"repository configuration not supported for distribution {cluster_tag}")
            ref = driver_image(
                precompiled=False, repository=repository, image=image, version=version, kernel="", tag_os=cluster_tag
            )
            return [
                operands.driver_daemonset(
                    name=COMMON_DRIVER_DAEMONSET,
                    labels={"app": COMMON_DRIVER_DAEMONSET, **base_labels},
                    node_selector={f"{DEPLOY_PREFIX}driver": "true"},
                    image=ref,
                    repo_config=repo_config,
                    **common,
                )
            ]
        if version.startswith(DIGEST_PREFIX):
            raise OperandError("specifying image digest is not supported when precompiled is enabled")
        kernels: dict[str, str] = {}  # getKernelVersionsMap: kernel -> ID+VERSION_ID over all GPU nodes
        for node in gpu_nodes:
            labels = labels_of(node)
            kernel, tag = labels.get(LABEL_KERNEL, ""), node_tag_os(labels, release)
            if not kernel or not tag:
                continue
            if kernels.setdefault(kernel, tag) != tag:
                raise OperandError(
                    f"different OS versions found for the same kernel version {kernel}: {kernels[kernel]} and {tag}"
                )
        out = []
        for kernel, kernel_tag in sorted(kernels.items()):
            name = precompiled_daemonset_name(kernel, kernel_tag)
            ref = driver_image(
                precompiled=True, repository=repository, image=image, version=version, kernel=kernel, tag_os=cluster_tag
            )
            out.append(
                operands.driver_daemonset(
                    name=name,
                    labels={"app": name, **base_labels},
                    node_selector={f"{DEPLOY_PREFIX}driver": "true", LABEL_KERNEL: kernel},
                    image=ref,
                    **common,
                )
            )
        return out

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
