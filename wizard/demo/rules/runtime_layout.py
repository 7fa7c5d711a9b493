"""Where each Kubernetes distribution keeps its containerd, and what the toolkit achieves there.

Sources: docs.rke2.io "GPU Operators", k3s-io/k3s PR #13680, docs.k0sproject.io "Runtime", MicroK8s' template.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

FLAVOURS = ("containerd", "cri-o", "rke2", "k3s", "k0s", "microk8s")
_KUBELET_RE = re.compile(r"\+(rke2|k3s|k0s)", re.ASCII)


@dataclass(frozen=True)
class RuntimeLayout:
    """One distribution's containerd on a node."""

    flavour: str
    socket: str
    config: str
    """The file containerd reads."""
    keeps_toolkit_imports: str
    """The file where an ``imports`` line the toolkit adds survives a restart ("" where none does)."""
    import_dirs: tuple[str, ...]
    """Folders whose ``*.toml`` containerd imports without the toolkit's help."""
    detects_toolkit: bool = False
    """The distribution adds an ``nvidia`` runtime itself when the toolkit is in ``/usr/local/nvidia``."""


def default_versions(flavour: str) -> tuple[str, str]:
    """(containerRuntimeVersion, kubeletVersion) a node of this flavour reports."""
    return {
        "rke2": ("containerd://1.7.23-k3s2", "v1.31.4+rke2r1"),
        "k3s": ("containerd://1.7.23-k3s2", "v1.31.4+k3s1"),
        "k0s": ("containerd://1.7.24", "v1.31.4+k0s"),
        "microk8s": ("containerd://1.6.28", "v1.31.4"),
        "cri-o": ("cri-o://1.31.3", "v1.31.4"),
    }.get(flavour, ("containerd://1.7.23", "v1.31.4"))


def flavour_labels(flavour: str) -> dict[str, str]:
    """Labels the distribution puts on its nodes."""
    return {
        "rke2": {"node.kubernetes.io/instance-type": "rke2"},
        "k3s": {"node.kubernetes.io/instance-type": "k3s"},
        "k0s": {"node.k0sproject.io/role": "worker"},
        "microk8s": {"microk8s.io/cluster": "true"},
    }.get(flavour, {})


def flavour_of(runtime: str, kubelet_version: str) -> str:
    """The flavour a node's version strings tell (a node added through the API, a NodeList scenario)."""
    if runtime.startswith("cri-o://"):
        return "cri-o"
    match = _KUBELET_RE.search(kubelet_version)
    return match.group(1) if match else "containerd"


def layout(flavour: str, runtime: str) -> RuntimeLayout:
    """Where this flavour's containerd (version from ``containerd://X.Y``) keeps its socket and config."""
    if flavour in ("rke2", "k3s"):
        folder = f"/var/lib/rancher/{flavour}/agent/etc/containerd"
        drop_ins = "config-v3.toml.d" if runtime.split("://", 1)[-1].startswith("2.") else "config.toml.d"
        return RuntimeLayout(
            flavour, "/run/k3s/containerd/containerd.sock", f"{folder}/config.toml", "", (f"{folder}/{drop_ins}",), True
        )
    if flavour == "k0s":
        return RuntimeLayout(
            flavour, "/run/k0s/containerd.sock", "/etc/k0s/containerd.toml", "", ("/etc/k0s/containerd.d",)
        )
    if flavour == "microk8s":
        args = "/var/snap/microk8s/current/args"
        return RuntimeLayout(
            flavour, "/var/snap/microk8s/common/run/containerd.sock", f"{args}/containerd.toml",
            f"{args}/containerd-template.toml", (),
        )  # fmt: skip
    if flavour == "cri-o":
        return RuntimeLayout(flavour, "", "/etc/crio/crio.conf", "", ("/etc/crio/crio.conf.d",))
    config = "/etc/containerd/config.toml"
    return RuntimeLayout(flavour, "/run/containerd/containerd.sock", config, config, ())


@dataclass(frozen=True)
class ToolkitHostPaths:
    """The host paths the toolkit works on, as the operator mounted them into its container."""

    config: str
    drop_in: str
    socket: str


def toolkit_error(where: RuntimeLayout, paths: ToolkitHostPaths) -> str:
    """The toolkit's fatal error on this node, or "" (it configures the runtime and signals it)."""
    if where.flavour == "cri-o" or not paths.socket:
        return ""
    if paths.socket != where.socket:
        base = posixpath.basename(paths.socket)
        return (
            "error running nvidia-toolkit: unable to setup runtime: unable to restart containerd: unable to dial: "
            f"dial unix /runtime/sock-dir/{base}: connect: no such file or directory"
        )
    return ""


def runtime_reads_drop_in(where: RuntimeLayout, paths: ToolkitHostPaths) -> bool:
    """Whether the node's containerd reads the drop-in the toolkit wrote."""
    if where.flavour == "cri-o":  # the operator sees CRI-O and uses CRI-O's own drop-in folder (not simulated)
        return True
    if posixpath.dirname(paths.drop_in) in where.import_dirs:
        return True
    return bool(where.keeps_toolkit_imports) and paths.config == where.keeps_toolkit_imports
