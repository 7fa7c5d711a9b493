"""DaemonSets the simulated GPU Operator renders: their names and images, the common skeleton, and the driver's."""

from __future__ import annotations

from typing import Any

from wizard.demo.rules.operator_rules import RuleError, image_path

DEFAULT_DRIVER_INSTALL_DIR = "/run/nvidia/driver"
DEFAULT_TOOLKIT_INSTALL_DIR = "/usr/local/nvidia"
DEFAULT_DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
COMPONENT_DRIVER = "nvidia-driver"
TOOLKIT_DS = "nvidia-container-toolkit-daemonset"
DEVICE_PLUGIN_DS = "nvidia-device-plugin-daemonset"
VALIDATOR_DS = "nvidia-operator-validator"
DRIVER_CTR = "nvidia-driver-ctr"
MANAGER_CTR = "k8s-driver-manager"

#: Operator env var holding each operand's default image (used when the CR leaves all fields empty).
ENV_NAMES = {
    "driver": "DRIVER_IMAGE",
    "manager": "DRIVER_MANAGER_IMAGE",
    "toolkit": "CONTAINER_TOOLKIT_IMAGE",
    "validator": "VALIDATOR_IMAGE",
    "devicePlugin": "DEVICE_PLUGIN_IMAGE",
}


class OperandError(Exception):
    """A ClusterPolicy/NVIDIADriver setting the real operator refuses; the message is the operator's."""


def operand_image(section: dict[str, Any], env_name: str, env: dict[str, str]) -> str:
    """The operator's ``ImagePath(repository, image, version, env)``: CR fields first, then the env var."""
    repository = str(section.get("repository") or "")
    image = str(section.get("image") or "")
    version = str(section.get("version") or "")
    try:
        return image_path(repository, image, version, env.get(env_name, ""), env_name)
    except RuleError as exc:
        raise OperandError(str(exc)) from None


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    """A controller ownerReference to a ClusterPolicy or NVIDIADriver."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", "nvidia.com/v1"),
        "kind": owner.get("kind", "ClusterPolicy"),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def host_path_volume(name: str, path: str, kind: str = "") -> dict[str, Any]:
    """A hostPath volume (``kind``: its ``hostPath.type``, none when empty)."""
    volume: dict[str, Any] = {"name": name, "hostPath": {"path": path}}
    if kind:
        volume["hostPath"]["type"] = kind
    return volume


def env_list(pairs: dict[str, str]) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in pairs.items()]


def node_name_env() -> dict[str, Any]:
    """``NODE_NAME`` from the pod's ``spec.nodeName``."""
    return {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}


def daemonset(
    *,
    name: str,
    namespace: str,
    labels: dict[str, str],
    node_selector: dict[str, str],
    containers: list[dict[str, Any]],
    init_containers: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    owner: dict[str, Any],
    on_delete: bool = False,
    service_account: str = "",
    pull_secrets: list[str] | None = None,
    pod_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A DaemonSet object with the operator's common pod settings (``pod_labels``: extra labels of its pods only)."""
    selector = {"app": labels["app"]}
    spec: dict[str, Any] = {
        "containers": containers,
        "initContainers": init_containers,
        "nodeSelector": node_selector,
        "priorityClassName": "system-node-critical",
        "serviceAccountName": service_account or name,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "volumes": volumes,
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
    }
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in pull_secrets]
    strategy: dict[str, Any] = (
        {"type": "OnDelete"} if on_delete else {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {"openshift.io/scc": "hostmount-anyuid"},
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": {**labels, **(pod_labels or {})}}, "spec": spec},
            "updateStrategy": strategy,
            "revisionHistoryLimit": 10,
        },
    }


def driver_daemonset(
    *,
    name: str,
    namespace: str,
    labels: dict[str, str],
    node_selector: dict[str, str],
    image: str,
    manager_image: str,
    owner: dict[str, Any],
    driver: dict[str, Any],
    precompiled: bool,
    repo_config: str = "",
    repo_config_dir: str = "",
    host_lib_modules: bool = False,
    pod_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The driver DaemonSet: init ``k8s-driver-manager``, main ``nvidia-driver-ctr`` (OnDelete)."""
    manager = driver.get("manager") or {}
    env = {"KERNEL_MODULE_TYPE": str(driver.get("kernelModuleType") or "auto")}
    if precompiled:
        env["PRECOMPILED"] = "true"
    mounts = [
        {"name": "run-nvidia", "mountPath": "/run/nvidia", "mountPropagation": "Bidirectional"},
        {"name": "run-nvidia-fabricmanager", "mountPath": "/run/nvidia-fabricmanager"},
        {"name": "var-log", "mountPath": "/var/log"},
        {"name": "dev-log", "mountPath": "/dev/log"},
        {"name": "host-os-release", "mountPath": "/host-etc/os-release", "readOnly": True},
    ]
    volumes = [
        host_path_volume("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
        host_path_volume("run-nvidia-fabricmanager", "/run/nvidia-fabricmanager", "DirectoryOrCreate"),
        host_path_volume("var-log", "/var/log"),
        host_path_volume("dev-log", "/dev/log"),
        host_path_volume("host-os-release", "/etc/os-release"),
        host_path_volume("host-root", "/"),
        host_path_volume("host-sys", "/sys", "Directory"),
    ]
    if host_lib_modules:
        mounts.append({"name": "lib-modules", "mountPath": "/run/host/lib/modules", "readOnly": True})
        volumes.append(host_path_volume("lib-modules", "/lib/modules", "Directory"))
    if repo_config:
        mounts.append({"name": "repo-config", "mountPath": repo_config_dir, "readOnly": True})
        volumes.append({"name": "repo-config", "configMap": {"name": repo_config, "defaultMode": 420}})
    init = {
        "name": MANAGER_CTR,
        "image": manager_image,
        "imagePullPolicy": str(manager.get("imagePullPolicy") or "IfNotPresent"),
        "command": ["driver-manager"],
        "args": ["uninstall_driver"],
        "env": [
            node_name_env(),
            *env_list(
                {
                    "NVIDIA_VISIBLE_DEVICES": "void",
                    "ENABLE_GPU_POD_EVICTION": "true",
                    "ENABLE_AUTO_DRAIN": "false",
                    "DRAIN_USE_FORCE": "false",
                    "DRAIN_POD_SELECTOR_LABEL": "",
                    "DRAIN_TIMEOUT_SECONDS": "0s",
                    "DRAIN_DELETE_EMPTYDIR_DATA": "false",
                    "OPERATOR_NAMESPACE": namespace,
                }
            ),
        ],
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "run-nvidia", "mountPath": "/run/nvidia", "mountPropagation": "Bidirectional"},
            {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
            {"name": "host-sys", "mountPath": "/sys"},
        ],
    }
    main = {
        "name": "nvidia-driver-ctr",
        "image": image,
        "imagePullPolicy": str(driver.get("imagePullPolicy") or "IfNotPresent"),
        "command": ["nvidia-driver"],
        "args": ["init"],
        "env": env_list(env),
        "securityContext": {"privileged": True, "seLinuxOptions": {"level": "s0"}},
        "startupProbe": {
            "exec": {"command": ["sh", "/usr/local/bin/nvidia-driver", "probe"]},
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "failureThreshold": 120,
        },
        "volumeMounts": mounts,
    }
    return daemonset(
        name=name,
        namespace=namespace,
        labels=labels,
        node_selector=node_selector,
        containers=[main],
        init_containers=[init],
        volumes=volumes,
        owner=owner,
        on_delete=True,
        service_account="nvidia-driver",
        pull_secrets=list(driver.get("imagePullSecrets") or []),
        pod_labels=pod_labels,
    )
