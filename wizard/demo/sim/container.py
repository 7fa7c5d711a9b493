"""Where a node command runs: a container of a pod on a node, its hostPath mounts and the files it sees."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from wizard.demo.sim.nodefs import container_files, host_dirs, host_files
from wizard.demo.sim.operands import DRIVER_CTR
from wizard.demo.sim.world import NodeView

READ_ONLY = "Read-only file system"


@dataclass(frozen=True)
class Ctx:
    """Where a command runs: a container of a pod on a node, or (after chroot) the host or driver root."""

    view: NodeView
    pod: dict[str, Any]
    container: str
    root: str = "container"
    """``container``, ``host`` (chroot /host) or ``driver`` (chroot into the driver install dir)."""
    mounts: dict[str, str] = field(default_factory=dict)
    """Container path -> host path, from the pod's hostPath volumes."""
    ro_sources: frozenset[str] = frozenset()
    """Host paths bound read-only into this context (``readOnly`` mounts; after chroot through one: ``/``)."""
    files: dict[str, str] = field(default_factory=dict)
    """Files the container wrote on its own file system (``/dev/termination-log``), shared by its commands."""

    @cached_property
    def mounts_deepest_first(self) -> tuple[tuple[str, str], ...]:
        """:attr:`mounts`, the longest container path first (a path resolves through the deepest mount)."""
        return tuple(sorted(self.mounts.items(), key=lambda kv: -len(kv[0])))

    @property
    def is_driver_ctr(self) -> bool:
        return self.root == "driver" or (self.root == "container" and self.container == DRIVER_CTR)


def make_ctx(view: NodeView, pod: dict[str, Any], container: str) -> Ctx:
    """The context of one container, with its hostPath mounts."""
    spec = pod.get("spec") or {}
    host_paths = {
        v["name"]: v["hostPath"]["path"] for v in spec.get("volumes") or [] if isinstance(v.get("hostPath"), dict)
    }
    mounts: dict[str, str] = {}
    read_only: set[str] = set()
    for ctr in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if ctr.get("name") != container:
            continue
        for vm in ctr.get("volumeMounts") or []:
            if vm.get("name") in host_paths:
                where = vm["mountPath"].rstrip("/") or "/"
                mounts[where] = host_paths[vm["name"]]
                if vm.get("readOnly"):
                    read_only.add(where)
    sources = frozenset(posixpath.normpath(mounts[m]) for m in read_only)
    return Ctx(view, pod, container, mounts=mounts, ro_sources=sources)


def bound_read_only(ctx: Ctx, host: str) -> bool:
    """Whether ``host`` is reached through a read-only bind here (only the bound file system itself:
    a non-recursive bind leaves the submounts below it as they are)."""
    mount = ctx.view.mount(host).target
    return any(
        (host == src or host.startswith(src.rstrip("/") + "/")) and ctx.view.mount(src).target == mount
        for src in ctx.ro_sources
    )


def write_file(ctx: Ctx, path: str) -> str | None:
    """Create an empty file (``touch``): the error message, or None."""
    path = posixpath.normpath(path)
    host = host_path(ctx, path)
    if host is not None:
        if bound_read_only(ctx, host) or not ctx.view.mount(host).writable:
            return READ_ONLY
        return None  # written to the node: nothing here reads it back
    if ctx.root != "container":
        return READ_ONLY
    ctx.files.setdefault(path, "")
    return None


def host_path(ctx: Ctx, path: str) -> str | None:
    """The host path a path in this context refers to, or None for the container's own files."""
    path = posixpath.normpath(path) if path else "/"
    if ctx.root in ("host", "driver"):
        return path if ctx.root == "host" else posixpath.join(ctx.view.driver_install_dir, path.lstrip("/"))
    for mount, host in ctx.mounts_deepest_first:
        if path == mount or path.startswith(mount + "/"):
            return posixpath.normpath(host + path[len(mount) :]) if host != "/" else (path[len(mount) :] or "/")
    return None


def _image_os(ctx: Ctx) -> tuple[str, str]:
    image = next(
        (c.get("image", "") for c in ctx.pod["spec"].get("containers") or [] if c.get("name") == ctx.container), ""
    )
    tag = str(image).rsplit("/", 1)[-1].partition(":")[2]
    match = re.search(r"-(ubuntu|rhel|rocky|sles|sle-micro|sl-micro|rhcos)(\d+(?:\.\d+)?)$", tag)
    if match:
        return match[1], match[2]
    return "rhel", "9.6"  # the operator's images are UBI 9 based


def read_file(ctx: Ctx, path: str) -> str | None:
    host = host_path(ctx, path)
    if host is not None:
        return host_files(ctx.view).get(host)
    if posixpath.normpath(path) in ctx.files:
        return ctx.files[posixpath.normpath(path)]
    extra = {}
    if ctx.container == DRIVER_CTR:
        extra["/usr/bin/nvidia-smi"] = "\x7fELF"
    os_id, version = _image_os(ctx)
    return container_files(os_id, version, extra).get(posixpath.normpath(path))


def is_dir(ctx: Ctx, path: str) -> bool:
    host = host_path(ctx, path)
    if host is not None:
        return host in host_dirs(ctx.view)
    norm = posixpath.normpath(path)
    return (
        norm in {"/", "/etc", "/usr", "/usr/bin", "/bin", "/tmp", "/var", "/proc", "/dev", "/run"} or norm in ctx.mounts
    )
