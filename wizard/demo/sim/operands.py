"""DaemonSets the simulated GPU Operator renders: driver, container toolkit, device plugin, validator.

Names, labels, container names, selectors and host paths follow the operator's assets
(``assets/state-driver/0500_daemonset.yaml`` and friends, see the facts doc §2, §7, §8); images come
from :func:`operand_image`, which applies the operator's ``ImagePath`` rule with the env fallback.
As in the real manifests, only the driver manager (init) container sees the host's ``/``;
``nvidia-driver-ctr`` does not, so host checks need a probe pod there as on a real cluster.
"""

from __future__ import annotations

import posixpath
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


def _host_path(name: str, path: str, kind: str = "") -> dict[str, Any]:
    volume: dict[str, Any] = {"name": name, "hostPath": {"path": path}}
    if kind:
        volume["hostPath"]["type"] = kind
    return volume


def _env(pairs: dict[str, str]) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in pairs.items()]


def _node_name_env() -> dict[str, Any]:
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
    """The driver DaemonSet: init ``k8s-driver-manager``, main ``nvidia-driver-ctr`` (OnDelete).

    ``repo_config`` is mounted at ``repo_config_dir``; ``host_lib_modules`` adds the SUSE precompiled
    ``lib-modules`` mount (the caller decides, per release and OS).
    """
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
        _host_path("run-nvidia", "/run/nvidia", "DirectoryOrCreate"),
        _host_path("run-nvidia-fabricmanager", "/run/nvidia-fabricmanager", "DirectoryOrCreate"),
        _host_path("var-log", "/var/log"),
        _host_path("dev-log", "/dev/log"),
        _host_path("host-os-release", "/etc/os-release"),
        _host_path("host-root", "/"),
        _host_path("host-sys", "/sys", "Directory"),
    ]
    if host_lib_modules:
        mounts.append({"name": "lib-modules", "mountPath": "/run/host/lib/modules", "readOnly": True})
        volumes.append(_host_path("lib-modules", "/lib/modules", "Directory"))
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
            _node_name_env(),
            *_env(
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
        "env": _env(env),
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


def toolkit_daemonset(
    *, namespace: str, image: str, validator_image: str, owner: dict[str, Any], spec: dict[str, Any]
) -> dict[str, Any]:
    """``nvidia-container-toolkit-daemonset``: waits for the driver, then writes the containerd drop-in."""
    toolkit = spec.get("toolkit") or {}
    install_dir = str(toolkit.get("installDir") or DEFAULT_TOOLKIT_INSTALL_DIR)
    driver_dir = str((spec.get("hostPaths") or {}).get("driverInstallDir") or DEFAULT_DRIVER_INSTALL_DIR)
    user = {
        str(item["name"]): str(item.get("value", ""))
        for item in toolkit.get("env") or []
        if isinstance(item, dict) and item.get("name")
    }
    env = {
        "RUNTIME": "containerd",
        "CONTAINERD_RUNTIME_CLASS": "nvidia",
        "NVIDIA_CDI_HOOK_PATH": f"{install_dir}/toolkit/nvidia-cdi-hook",
        "DRIVER_INSTALL_DIR": driver_dir,
    }
    if install_dir != DEFAULT_TOOLKIT_INSTALL_DIR:
        env["ROOT"] = install_dir
    env.update(user)
    runtime_env, runtime_volumes = runtime_mounts(user)
    env.update(runtime_env)
    labels = {"app": TOOLKIT_DS, "app.kubernetes.io/managed-by": "gpu-operator", "helm.sh/chart": "gpu-operator"}
    main = {
        "name": "nvidia-container-toolkit-ctr",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/bash", "-c"],
        "args": ["/bin/entrypoint.sh"],
        "env": _env(env),
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "toolkit-install-dir", "mountPath": "/usr/local/nvidia"},
            {"name": "containerd-config", "mountPath": "/runtime/config-dir/"},
            {"name": "containerd-drop-in-config", "mountPath": "/runtime/config-dir.d/"},
            {"name": "containerd-socket", "mountPath": "/runtime/sock-dir/"},
            {"name": "driver-install-dir", "mountPath": "/driver-root", "mountPropagation": "HostToContainer"},
            {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
        ],
    }
    return daemonset(
        name=TOOLKIT_DS,
        namespace=namespace,
        labels=labels,
        node_selector={"nvidia.com/gpu.deploy.container-toolkit": "true"},
        containers=[main],
        init_containers=[_validation_init("driver-validation", "driver", validator_image)],
        volumes=[
            _host_path("toolkit-install-dir", install_dir),
            *runtime_volumes,
            _host_path("driver-install-dir", driver_dir, "DirectoryOrCreate"),
            _host_path("run-nvidia", "/run/nvidia", "Directory"),
            _host_path("host-root", "/"),
        ],
        owner=owner,
        service_account="nvidia-container-toolkit",
    )


def runtime_mounts(user: dict[str, str]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The operator's ``transformForRuntime`` for containerd: host paths from the env (or its defaults) become
    hostPath volumes, and the env names their place inside the container (``controllers/object_controls.go``).
    """
    config = user.get("CONTAINERD_CONFIG") or user.get("RUNTIME_CONFIG") or "/etc/containerd/config.toml"
    drop_in = user.get("RUNTIME_DROP_IN_CONFIG") or "/etc/containerd/conf.d/99-nvidia.toml"
    socket = user.get("CONTAINERD_SOCKET") or "/run/containerd/containerd.sock"
    env = {
        "RUNTIME_CONFIG": f"/runtime/config-dir/{posixpath.basename(config)}",
        "CONTAINERD_CONFIG": f"/runtime/config-dir/{posixpath.basename(config)}",
        "RUNTIME_DROP_IN_CONFIG": f"/runtime/config-dir.d/{posixpath.basename(drop_in)}",
        "RUNTIME_DROP_IN_CONFIG_HOST_PATH": drop_in,
        "RUNTIME_SOCKET": f"/runtime/sock-dir/{posixpath.basename(socket)}",
        "CONTAINERD_SOCKET": f"/runtime/sock-dir/{posixpath.basename(socket)}",
    }
    sources = user.get("RUNTIME_CONFIG_SOURCE")
    if sources:  # file=<host path> is read through the read-only host root at /host
        env["RUNTIME_CONFIG_SOURCE"] = ",".join(
            f"file=/host{part[5:]}" if part.startswith("file=/") else part for part in sources.split(",")
        )
    volumes = [
        _host_path("containerd-config", posixpath.dirname(config), "DirectoryOrCreate"),
        _host_path("containerd-drop-in-config", posixpath.dirname(drop_in), "DirectoryOrCreate"),
        _host_path("containerd-socket", posixpath.dirname(socket)),
    ]
    return env, volumes


def _validation_init(name: str, component: str, image: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": ["nvidia-validator"],
        "env": [_node_name_env(), *_env({"COMPONENT": component, "WITH_WAIT": "true"})],
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {
                "name": "run-nvidia-validations",
                "mountPath": "/run/nvidia/validations",
                "mountPropagation": "Bidirectional",
            },
            {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
        ],
    }


def device_plugin_daemonset(
    *, namespace: str, image: str, validator_image: str, owner: dict[str, Any]
) -> dict[str, Any]:
    """``nvidia-device-plugin-daemonset``: advertises ``nvidia.com/gpu`` once the toolkit is ready."""
    main = {
        "name": "nvidia-device-plugin",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["nvidia-device-plugin"],
        "env": _env({"PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "envvar"}),
        "securityContext": {"privileged": True},
    }
    return daemonset(
        name=DEVICE_PLUGIN_DS,
        namespace=namespace,
        labels={"app": DEVICE_PLUGIN_DS, "app.kubernetes.io/managed-by": "gpu-operator"},
        node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"},
        containers=[main],
        init_containers=[_validation_init("toolkit-validation", "toolkit", validator_image)],
        volumes=[
            _host_path("run-nvidia-validations", "/run/nvidia/validations", "DirectoryOrCreate"),
            _host_path("host-root", "/"),
        ],
        owner=owner,
        service_account="nvidia-device-plugin",
    )


def validator_daemonset(*, namespace: str, image: str, owner: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """``nvidia-operator-validator``: driver, toolkit, cuda and plugin validations as init containers."""
    driver_dir = str((spec.get("hostPaths") or {}).get("driverInstallDir") or DEFAULT_DRIVER_INSTALL_DIR)
    inits = [
        _validation_init(f"{component}-validation", component, image)
        for component in ("driver", "toolkit", "cuda", "plugin")
    ]
    for init in inits:
        init["env"].extend(
            _env({"DRIVER_INSTALL_DIR": driver_dir, "DRIVER_INSTALL_DIR_CTR_PATH": "/run/nvidia/driver"})
        )
    main = {
        "name": "nvidia-operator-validator",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": ["echo all validations are successful; exec sleep infinity"],
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {
                "name": "run-nvidia-validations",
                "mountPath": "/run/nvidia/validations",
                "mountPropagation": "Bidirectional",
            },
            {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
        ],
    }
    return daemonset(
        name=VALIDATOR_DS,
        namespace=namespace,
        labels={
            "app": VALIDATOR_DS,
            "app.kubernetes.io/part-of": "gpu-operator",
            "app.kubernetes.io/managed-by": "gpu-operator",
        },
        node_selector={"nvidia.com/gpu.deploy.operator-validator": "true"},
        containers=[main],
        init_containers=inits,
        volumes=[
            _host_path("run-nvidia-validations", "/run/nvidia/validations", "DirectoryOrCreate"),
            _host_path("driver-install-dir", driver_dir),
            _host_path("host-root", "/"),
        ],
        owner=owner,
        service_account="nvidia-operator-validator",
    )
