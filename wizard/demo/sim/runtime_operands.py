"""The operand DaemonSets after the driver: container toolkit, device plugin, validator."""

from __future__ import annotations

import posixpath
from typing import Any

from wizard.demo.sim.operands import (
    DEFAULT_DRIVER_INSTALL_DIR,
    DEFAULT_TOOLKIT_INSTALL_DIR,
    DEVICE_PLUGIN_DS,
    TOOLKIT_DS,
    VALIDATOR_DS,
    daemonset,
    env_list,
    host_path_volume,
    node_name_env,
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
    # as the real operator renders it (tests/realcluster/recordings): ROOT always names the install
    # folder, DRIVER_INSTALL_DIR only a driver root other than the default; the CDI hook's path goes
    # to the device plugin and MIG manager, not to the toolkit
    env = {"RUNTIME": "containerd", "CONTAINERD_RUNTIME_CLASS": "nvidia", "ROOT": install_dir}
    if driver_dir != DEFAULT_DRIVER_INSTALL_DIR:
        env["DRIVER_INSTALL_DIR"] = driver_dir
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
        "env": env_list(env),
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "toolkit-install-dir", "mountPath": install_dir},
            {"name": "toolkit-root", "mountPath": "/run/nvidia/toolkit"},
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
            host_path_volume("toolkit-install-dir", install_dir),
            *runtime_volumes,
            host_path_volume("toolkit-root", "/run/nvidia/toolkit", "DirectoryOrCreate"),
            host_path_volume("driver-install-dir", driver_dir, "DirectoryOrCreate"),
            host_path_volume("host-root", "/"),
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
        host_path_volume("containerd-config", posixpath.dirname(config), "DirectoryOrCreate"),
        host_path_volume("containerd-drop-in-config", posixpath.dirname(drop_in), "DirectoryOrCreate"),
        host_path_volume("containerd-socket", posixpath.dirname(socket)),
    ]
    return env, volumes


def _validation_mounts() -> list[dict[str, Any]]:
    """The validator's mounts (each container its own copy): the shared validations folder and the host read-only."""
    return [
        {"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "mountPropagation": "Bidirectional"},
        {"name": "host-root", "mountPath": "/host", "readOnly": True, "mountPropagation": "HostToContainer"},
    ]


def _validation_init(name: str, component: str, image: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": ["nvidia-validator"],
        "env": [node_name_env(), *env_list({"COMPONENT": component, "WITH_WAIT": "true"})],
        "securityContext": {"privileged": True},
        "volumeMounts": _validation_mounts(),
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
        "env": env_list({"PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "envvar"}),
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
            host_path_volume("run-nvidia-validations", "/run/nvidia/validations", "DirectoryOrCreate"),
            host_path_volume("host-root", "/"),
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
            env_list({"DRIVER_INSTALL_DIR": driver_dir, "DRIVER_INSTALL_DIR_CTR_PATH": "/run/nvidia/driver"})
        )
    main = {
        "name": "nvidia-operator-validator",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c"],
        "args": ["echo all validations are successful; exec sleep infinity"],
        "securityContext": {"privileged": True},
        "volumeMounts": _validation_mounts(),
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
            host_path_volume("run-nvidia-validations", "/run/nvidia/validations", "DirectoryOrCreate"),
            host_path_volume("driver-install-dir", driver_dir),
            host_path_volume("host-root", "/"),
        ],
        owner=owner,
        service_account="nvidia-operator-validator",
    )
