"""Host tools of a simulated node that answer from the scenario's host state (nouveau, Secure Boot, dkms…)."""

from __future__ import annotations

import fnmatch
import posixpath

from wizard.demo.sim.nodefs import host_dirs, host_files
from wizard.demo.sim.world import NodeView

Result = tuple[int, str, str]

#: MiB free on a mount the scenario does not name.
PLENTY_MB = 200_000
_PACKAGE_HOST_IP = "203.0.113.10"


def _mokutil(view: NodeView, args: list[str]) -> Result:
    if args[:1] != ["--sb-state"]:
        return 1, "", "mokutil: only --sb-state is simulated\n"
    return 0, f"SecureBoot {'enabled' if view.spec.secure_boot else 'disabled'}\n", ""


def _installed_host_driver(view: NodeView) -> bool:
    """A host driver installed as a module for the running kernel (dkms or a kmod package)."""
    return bool(view.spec.host_driver) and view.spec.dkms


def _dkms(view: NodeView, args: list[str]) -> Result:
    if args[:1] != ["status"]:
        return 1, "", "Error! Arguments <module> and <module-version> are not specified.\n"
    if not _installed_host_driver(view):
        return 0, "", ""
    arch = "x86_64" if view.spec.arch == "amd64" else "aarch64"
    return 0, f"nvidia/{view.spec.host_driver}, {view.spec.kernel}, {arch}: installed\n", ""


def _modinfo(view: NodeView, args: list[str]) -> Result:
    name = next((a for a in args if not a.startswith("-")), "")
    if name == "nvidia" and _installed_host_driver(view):
        return 0, f"/lib/modules/{view.spec.kernel}/updates/dkms/nvidia.ko.zst\n", ""
    if name == "nouveau":
        return 0, f"/lib/modules/{view.spec.kernel}/kernel/drivers/gpu/drm/nouveau/nouveau.ko.zst\n", ""
    return 1, "", f"modinfo: ERROR: Module {name} not found.\n"


def _find(view: NodeView, args: list[str]) -> Result:
    """``find [-L] ROOT [-mindepth N] [-maxdepth N] [-name GLOB] [-type d|f]`` over the host's files."""
    roots, name, kind, lo, hi = [], "*", "", 0, 99
    it = iter(args)
    for arg in it:
        if arg == "-name":
            name = next(it, "*")
        elif arg == "-type":
            kind = next(it, "")
        elif arg == "-mindepth":
            lo = int(next(it, "0"))
        elif arg == "-maxdepth":
            hi = int(next(it, "99"))
        elif not arg.startswith("-"):
            roots.append(posixpath.normpath(arg))
    dirs = host_dirs(view)
    entries = ([(d, "d") for d in dirs]) + [(f, "f") for f in host_files(view)]
    out = []
    for root in roots or ["."]:
        if root not in dirs:
            return 1, "", f"find: '{root}': No such file or directory\n"
        for path, entry_kind in sorted(entries):
            if path != root and not path.startswith(root.rstrip("/") + "/"):
                continue
            depth = 0 if path == root else path[len(root.rstrip("/")) + 1 :].count("/") + 1
            if lo <= depth <= hi and fnmatch.fnmatch(posixpath.basename(path), name) and kind in ("", entry_kind):
                out.append(path)
    return 0, "".join(f"{p}\n" for p in out), ""


def _df(view: NodeView, args: list[str]) -> Result:
    """``df -m --output=COLUMNS PATH…``, as gpu-wizard's host check runs it (GNU's; no other form is simulated)."""
    paths = [a for a in args if not a.startswith("-")] or ["/"]
    output = next((a.split("=", 1)[1].split(",") for a in args if a.startswith("--output=")), None)
    heads = {"source": "Filesystem", "size": "1M-blocks", "used": "Used", "avail": "Avail", "target": "Mounted on"}
    if output is None or not set(output) <= set(heads):
        return 1, "", f"df: {','.join(output or [])!r}: not a valid field for the output\n"
    lines = [" ".join(heads[c] for c in output)]
    for path in paths:
        mount = view.mount(path)
        free = view.spec.free_mb.get(mount.target, PLENTY_MB)
        size = max(free * 2, 1024)
        row = {"source": mount.source, "size": size, "used": size - free, "avail": free, "target": mount.target}
        lines.append(" ".join(str(row[c]) for c in output))
    return 0, "\n".join(lines) + "\n", ""


def _getent(view: NodeView, args: list[str]) -> Result:
    if args[:1] != ["hosts"] or len(args) < 2:
        return 1, "", "getent: only 'hosts NAME' is simulated\n"
    if not view.spec.package_repo:
        return 2, "", ""  # not found: an air-gapped node resolves no public name
    return 0, f"{_PACKAGE_HOST_IP}    {args[1]}\n", ""


HOST_TOOLS = {
    "mokutil": _mokutil,
    "dkms": _dkms,
    "modinfo": _modinfo,
    "find": _find,
    "df": _df,
    "getent": _getent,
}


def run_host_tool(view: NodeView, cmd: str, args: list[str]) -> Result | None:
    """The tool's result, or None when ``cmd`` is not one of these tools."""
    tool = HOST_TOOLS.get(cmd)
    return tool(view, args) if tool is not None else None
