"""What each simulated node currently has: host facts plus the operand pods running on it."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from wizard.demo.rules.hostos import Mount, mount_of, mounts
from wizard.demo.rules.nodeinfo import read_node
from wizard.demo.rules.runtime_layout import (
    RuntimeLayout,
    ToolkitHostPaths,
    flavour_of,
    layout,
    runtime_reads_drop_in,
    toolkit_error,
)
from wizard.demo.scenarios.scenario import NodeSpec
from wizard.demo.sim.operands import (
    COMPONENT_DRIVER,
    DEFAULT_DRIVER_INSTALL_DIR,
    DEFAULT_TOOLKIT_INSTALL_DIR,
    DEVICE_PLUGIN_DS,
    DRIVER_CTR,
    TOOLKIT_DS,
    VALIDATOR_DS,
)
from wizard.demo.sim.simutil import labels_of

_VERSION_RE = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")
#: Latest release of each driver branch, for images tagged with the branch only (``580-<kernel>-…``).
BRANCH_LATEST = {
    "535": "535.274.02",
    "550": "550.163.01",
    "570": "570.195.03",
    "575": "575.64.05",
    "580": "580.126.20",
    "590": "590.48.01",
    "595": "595.91.07",
    "610": "610.57.04",
}


def driver_version_of(image: str) -> str:
    """The driver version a driver image installs, from its tag (``580.126.09.1-…`` -> ``580.126.09``)."""
    tag = image.rsplit("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2] if "@" not in image else ""
    match = _VERSION_RE.match(tag)
    if not match:
        return BRANCH_LATEST["580"]
    major, minor, patch = match.groups()
    if minor is None:
        return BRANCH_LATEST.get(major, f"{major}.00.00")
    return f"{major}.{minor}.{patch}" if patch else f"{major}.{minor}"


def container_status(pod: dict[str, Any], name: str) -> dict[str, Any]:
    """The status of one container (init or main) by name, or {}."""
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        if cs.get("name") == name:
            return cs
    return {}


def is_running(cs: dict[str, Any]) -> bool:
    return "running" in (cs.get("state") or {})


def completed(cs: dict[str, Any]) -> bool:
    """An init container that finished successfully."""
    term = (cs.get("state") or {}).get("terminated") or {}
    return bool(term) and term.get("exitCode") == 0


def pod_ready(pod: dict[str, Any] | None) -> bool:
    if pod is None:
        return False
    conds = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def spec_from_node(node: dict[str, Any]) -> NodeSpec:
    """A NodeSpec for a node that is not in the scenario (added through the API)."""
    reading = read_node(node)
    return NodeSpec(
        name=reading.name,
        os_id=reading.os_id or "ubuntu",
        os_version=reading.os_version or "22.04",
        os_image=reading.os_image,
        kernel=reading.kernel,
        gpu_product=reading.gpu_product,
        gpu_count=reading.gpu_count,
    )


@dataclass
class NodeView:
    """One node: its scenario spec and what the operator's pods have done on it."""

    spec: NodeSpec
    labels: dict[str, str]
    ip: str = ""
    pod_cidr: str = ""
    """``spec.podCIDR`` (``10.42.3.0/24``): pod IPs on this node come from it."""
    driver_pod: dict[str, Any] | None = None
    driver_ds_exists: bool = False
    toolkit_pod: dict[str, Any] | None = None
    toolkit_ds_exists: bool = False
    plugin_pod: dict[str, Any] | None = None
    plugin_ds_exists: bool = False
    validator_pod: dict[str, Any] | None = None
    toolkit_install_dir: str = DEFAULT_TOOLKIT_INSTALL_DIR
    driver_install_dir: str = DEFAULT_DRIVER_INSTALL_DIR
    drop_in_path: str = "/etc/containerd/conf.d/99-nvidia.toml"
    mount_table: list[Mount] = field(default_factory=list)
    toolkit_paths: ToolkitHostPaths = field(
        default_factory=lambda: ToolkitHostPaths(
            "/etc/containerd/config.toml", "/etc/containerd/conf.d/99-nvidia.toml", "/run/containerd/containerd.sock"
        )
    )
    """The host paths the toolkit DaemonSet mounts for the runtime's config, drop-in and socket."""
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """What is worked out from the view once and read by every command on the node (its files, its mounts):
    a view is not changed after :func:`build_views` (a changed node or pod gets a new view)."""

    @property
    def runtime_layout(self) -> RuntimeLayout:
        spec = self.spec
        return layout(spec.runtime_flavour or flavour_of(spec.runtime, spec.kubelet_version), spec.runtime)

    @property
    def toolkit_error(self) -> str:
        """Why the toolkit container fails on this node ("" when it configures the runtime)."""
        return toolkit_error(self.runtime_layout, self.toolkit_paths)

    @property
    def nvidia_runtime_configured(self) -> bool:
        """containerd has an ``nvidia`` runtime: it reads the toolkit's drop-in, or its distribution added one."""
        if not self.toolkit_installed:
            return False
        where = self.runtime_layout
        found_by_distribution = where.detects_toolkit and self.toolkit_install_dir == DEFAULT_TOOLKIT_INSTALL_DIR
        return found_by_distribution or runtime_reads_drop_in(where, self.toolkit_paths)

    @property
    def host_driver_ok(self) -> bool:
        """A working driver is installed on the host itself."""
        return bool(self.spec.host_driver) and not self.spec.host_driver_broken

    @property
    def driver_loaded(self) -> bool:
        """The containerized driver is loaded (its pod's driver container is ready)."""
        return self.driver_pod is not None and bool(container_status(self.driver_pod, DRIVER_CTR).get("ready"))

    @property
    def driver_version(self) -> str:
        """The version the node's working driver reports, or ""."""
        if self.driver_loaded and self.driver_pod is not None:
            for container in self.driver_pod["spec"].get("containers") or []:
                if container.get("name") == DRIVER_CTR:
                    return driver_version_of(str(container.get("image", "")))
        return self.spec.host_driver if self.host_driver_ok else ""

    def mount(self, path: str) -> Mount:
        """The host mount holding ``path``."""
        key = ("mount", path)
        found: Mount | None = self.memo.get(key)
        if found is None:
            found = self.memo[key] = mount_of(self.mount_table, path)
        return found

    def validated(self, component: str) -> bool:
        """``/run/nvidia/validations/<component>-ready`` exists (a validation init container passed)."""
        pods = [self.validator_pod]
        if component == "driver":
            pods.append(self.toolkit_pod)
        if component == "toolkit":
            pods.append(self.plugin_pod)
        return any(p is not None and completed(container_status(p, f"{component}-validation")) for p in pods)

    @property
    def toolkit_installed(self) -> bool:
        """The toolkit container runs, so the containerd drop-in is in place."""
        return self.toolkit_pod is not None and is_running(
            container_status(self.toolkit_pod, "nvidia-container-toolkit-ctr")
        )


def _env_of(ds_or_pod: dict[str, Any], container: str) -> dict[str, str]:
    spec = ds_or_pod.get("spec") or {}
    spec = (spec.get("template") or {}).get("spec") or spec
    for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if ctr.get("name") == container:
            return {e["name"]: str(e.get("value", "")) for e in ctr.get("env") or [] if "name" in e}
    return {}


def _toolkit_host_paths(ds: dict[str, Any], env: dict[str, str]) -> ToolkitHostPaths:
    """The host files behind the toolkit's ``/runtime/...`` env: its hostPath volumes plus the file names."""
    volumes = {
        v.get("name"): str((v.get("hostPath") or {}).get("path") or "")
        for v in ((ds.get("spec") or {}).get("template") or {}).get("spec", {}).get("volumes") or []
    }

    def host(volume: str, inside: str) -> str:
        folder = volumes.get(volume, "")
        return posixpath.join(folder, posixpath.basename(inside)) if folder and inside else ""

    return ToolkitHostPaths(
        config=host("containerd-config", env.get("CONTAINERD_CONFIG", "")),
        drop_in=env.get("RUNTIME_DROP_IN_CONFIG_HOST_PATH") or host("containerd-drop-in-config", "99-nvidia.toml"),
        socket=host("containerd-socket", env.get("CONTAINERD_SOCKET", "")),
    )


def build_views(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    daemonsets: list[dict[str, Any]],
    specs: dict[str, NodeSpec],
) -> dict[str, NodeView]:
    """A NodeView per node from this tick's objects."""
    views: dict[str, NodeView] = {}
    driver_ds = any(labels_of(ds).get("app.kubernetes.io/component") == COMPONENT_DRIVER for ds in daemonsets)
    toolkit = next((ds for ds in daemonsets if ds["metadata"]["name"] == TOOLKIT_DS), None)
    plugin_ds = any(ds["metadata"]["name"] == DEVICE_PLUGIN_DS for ds in daemonsets)
    env = _env_of(toolkit, "nvidia-container-toolkit-ctr") if toolkit else {}
    toolkit_paths = _toolkit_host_paths(toolkit, env) if toolkit and env else None  # the same for every node
    for node in nodes:
        name = node["metadata"]["name"]
        spec = specs.get(name) or spec_from_node(node)
        view = NodeView(
            spec=spec,
            labels=dict(labels_of(node)),
            pod_cidr=str((node.get("spec") or {}).get("podCIDR") or ""),
            ip=next(
                (
                    a["address"]
                    for a in (node.get("status") or {}).get("addresses") or []
                    if a.get("type") == "InternalIP"
                ),
                "",
            ),
            driver_ds_exists=driver_ds,
            toolkit_ds_exists=toolkit is not None,
            plugin_ds_exists=plugin_ds,
            mount_table=mounts(spec.os_id, spec.noexec_mounts),
        )
        if env:
            view.toolkit_install_dir = env.get("ROOT", DEFAULT_TOOLKIT_INSTALL_DIR)
            view.driver_install_dir = env.get("DRIVER_INSTALL_DIR", DEFAULT_DRIVER_INSTALL_DIR)
            view.toolkit_paths = toolkit_paths or view.toolkit_paths
            view.drop_in_path = view.toolkit_paths.drop_in
        views[name] = view
    for pod in pods:
        pod_view = views.get((pod.get("spec") or {}).get("nodeName", ""))
        if pod_view is None:
            continue
        labels = labels_of(pod)
        app = labels.get("app", "")
        if labels.get("app.kubernetes.io/component") == COMPONENT_DRIVER:
            pod_view.driver_pod = pod
        elif app == TOOLKIT_DS:
            pod_view.toolkit_pod = pod
        elif app == DEVICE_PLUGIN_DS:
            pod_view.plugin_pod = pod
        elif app == VALIDATOR_DS:
            pod_view.validator_pod = pod
    return views


def operand_role(pod: dict[str, Any]) -> bool:
    """A pod :func:`build_views` puts into a node's view (read without ``labels_of``: stored objects)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/component") == COMPONENT_DRIVER or labels.get("app") in _VIEW_APPS


def _view_daemonset(ds: dict[str, Any]) -> bool:
    """A DaemonSet :func:`build_views` reads (the driver's, the toolkit's, the device plugin's)."""
    meta = ds.get("metadata") or {}
    component = (meta.get("labels") or {}).get("app.kubernetes.io/component")
    return component == COMPONENT_DRIVER or meta.get("name") in (TOOLKIT_DS, DEVICE_PLUGIN_DS)


_VIEW_APPS = frozenset({TOOLKIT_DS, DEVICE_PLUGIN_DS, VALIDATOR_DS})


class NodeViews:
    """One node's view at a time (per exec, per pod a light tick steps), built again only when what
    :func:`build_views` reads of it changed: the node, the operand pods on it, the operand DaemonSets.
    """

    def __init__(self, specs: dict[str, NodeSpec]) -> None:
        self.specs = specs
        self._views: dict[str, tuple[tuple[Any, ...], NodeView]] = {}
        self._daemonsets: tuple[list[dict[str, Any]], tuple[dict[str, Any], ...]] = ([], ())
        """The last DaemonSet list passed in (held, so its identity stays its own) and those a view reads."""

    def view(self, node: dict[str, Any], operands: list[dict[str, Any]], daemonsets: list[dict[str, Any]]) -> NodeView:
        """The view of ``node`` given the pods bound to it that a view reads (:func:`operand_role`: the caller keeps
        them indexed, a probe pod is none of them) and every DaemonSet (do not mutate the view or the lists; pass
        the same ``daemonsets`` list for many nodes when nothing was written in between: it is sorted once)."""
        name = node["metadata"]["name"]
        if self._daemonsets[0] is not daemonsets:
            self._daemonsets = (daemonsets, tuple(d for d in daemonsets if _view_daemonset(d)))
        inputs = (node, operands, self._daemonsets[1])
        found = self._views.get(name)
        if found is not None and found[0] == inputs:
            return found[1]
        view = build_views([node], operands, daemonsets, self.specs)[name]
        self._views[name] = (inputs, view)
        return view

    def forget(self, node: str) -> None:
        self._views.pop(node, None)
