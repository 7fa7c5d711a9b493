"""The commands a simulated container answers (``kubectl exec``, command pods, gpu-wizard's probe steps)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from wizard.demo.sim import probescript, smi
from wizard.demo.sim.container import Ctx, bound_read_only, host_path, is_dir, read_file, write_file
from wizard.demo.sim.hostcmd import run_host_tool
from wizard.demo.sim.operands import DRIVER_CTR
from wizard.demo.sim.world import driver_version_of

Result = tuple[int, str, str]


def _nvidia_smi(ctx: Ctx, args: list[str]) -> Result:
    view = ctx.view
    gpus = smi.gpus_of(view.spec)
    if ctx.is_driver_ctr:
        if not view.driver_loaded:
            return 9, smi.FAILED, ""
        image = next(
            (
                c.get("image", "")
                for c in (view.driver_pod or ctx.pod)["spec"]["containers"]
                if c.get("name") == DRIVER_CTR
            ),
            "",
        )
        return smi.run(args, driver_version_of(str(image)), gpus)
    if ctx.root == "host" and view.spec.host_driver:
        if view.spec.host_driver_broken:
            return 9, smi.FAILED, ""
        return smi.run(args, view.spec.host_driver, gpus)
    return 127, "", "sh: nvidia-smi: command not found\n"


def _findmnt(ctx: Ctx, args: list[str]) -> Result:
    target, columns, header, host_table = "", ["TARGET", "SOURCE", "FSTYPE", "OPTIONS"], True, False
    it = iter(args)
    for arg in it:
        if arg in ("-T", "--target"):
            target = next(it, "")
        elif arg in ("-N", "--task"):
            # pid 1's mount table: with host / bound in, the host's init (its /proc is the host's)
            host_table = next(it, "") == "1" and (ctx.root == "host" or bool(ctx.mounts))
        elif arg in ("-n", "--noheadings"):
            header = False
        elif arg in ("-o", "--output"):
            columns = [c.strip().upper() for c in next(it, "").split(",") if c.strip()]
        elif not arg.startswith("-"):
            target = arg
    host = host_path(ctx, target or "/")
    if host is None:
        row = {
            "TARGET": "/",
            "SOURCE": "overlay",
            "FSTYPE": "overlay",
            "OPTIONS": "rw,relatime,lowerdir=/var/lib/containerd/l",
        }
    else:
        mount = ctx.view.mount(host)
        shown = mount.target
        for cpath, hpath in ctx.mounts.items():  # show the mount point as the container sees it
            if hpath == "/" and ctx.root == "container":
                shown = posixpath.normpath(cpath + mount.target)
        options = mount.options
        if host_table:
            shown = mount.target
        elif bound_read_only(ctx, host):
            options = "ro," + options.split(",", 1)[-1] if "," in options else "ro"
        row = {"TARGET": shown, "SOURCE": mount.source, "FSTYPE": mount.fstype, "OPTIONS": options}
    unknown = [c for c in columns if c not in row]
    if unknown:
        return 1, "", f"findmnt: unknown column: {unknown[0]}\n"
    widths = {c: max(len(c), len(row[c])) for c in columns}
    lines = []
    if header:
        lines.append(" ".join(c.ljust(widths[c]) for c in columns).rstrip())
    lines.append(" ".join(row[c].ljust(widths[c]) for c in columns).rstrip())
    return 0, "\n".join(lines) + "\n", ""


def _grep(ctx: Ctx, args: list[str]) -> Result:
    flags: set[str] = set()
    rest: list[str] = []
    limit, it = -1, iter(args)
    for arg in it:
        if arg == "-m" and not rest:
            value = next(it, "")
            if not value.isdigit():
                return 2, "", f"grep: invalid max count: {value!r}\n"
            limit = int(value)
        elif arg.startswith("-") and len(arg) > 1 and not rest:
            flags.update(arg[1:])
        else:
            rest.append(arg)
    if not rest:
        return 2, "", "Usage: grep [OPTION]... PATTERNS [FILE]...\n"
    pattern = re.compile(rest[0])  # -E's syntax, near enough to Python's for gpu-wizard's patterns; -o, -m and -n
    sources = [(f, read_file(ctx, f)) for f in rest[1:]] or [("", "")]  # no stdin: an exec sends none
    out, err, found = [], "", False
    for name, text in sources:
        if text is None:
            err += f"grep: {name}: No such file or directory\n"
            continue
        matched = 0
        for number, line in enumerate(text.splitlines(), 1):
            if matched == limit:  # -m N: stop after N matching lines
                break
            if pattern.search(line):
                matched += 1
                found = True
                prefix = (f"{name}:" if len(sources) > 1 else "") + (f"{number}:" if "n" in flags else "")
                shown = [m.group(0) for m in pattern.finditer(line) if m.group(0)] if "o" in flags else [line]
                out += [prefix + part for part in shown]  # -o: each match on a line of its own
    code = 0 if found else (2 if err else 1)
    return code, "".join(f"{line}\n" for line in out), err


def _test(ctx: Ctx, args: list[str]) -> Result:
    """``test -e|-d|-w PATH``: what gpu-wizard's path checks and the probe's own tests ask."""
    if len(args) != 2:
        return 2, "", "sh: test: unsupported expression\n"
    op, path = args
    exists_file = read_file(ctx, path) is not None
    exists_dir = is_dir(ctx, path)
    host = host_path(ctx, path)
    if op == "-d":
        ok = exists_dir
    elif op == "-e":
        ok = exists_file or exists_dir
    elif op == "-w":
        ok = (exists_file or exists_dir) and (
            host is None or (ctx.view.mount(host).writable and not bound_read_only(ctx, host))
        )
    else:
        return 2, "", f"sh: test: {op}: unary operator expected\n"
    return (0 if ok else 1), "", ""


def _chroot(ctx: Ctx, args: list[str]) -> Result:
    if len(args) < 2:
        return 125, "", "chroot: missing operand\n"
    target, command = args[0], args[1:]
    host = host_path(ctx, target)
    if host == "/":
        sources = frozenset({"/"}) if bound_read_only(ctx, "/") else frozenset()
        new = Ctx(ctx.view, ctx.pod, ctx.container, "host", {}, sources, ctx.files)
    elif host is not None and posixpath.normpath(host) == ctx.view.driver_install_dir and ctx.view.driver_loaded:
        if ctx.view.mount(host).noexec:
            return 126, "", f"chroot: failed to run command '{command[0]}': Permission denied\n"
        new = Ctx(ctx.view, ctx.pod, ctx.container, "driver", {}, frozenset(), ctx.files)
    else:
        return 125, "", f"chroot: cannot change root directory to '{target}': No such file or directory\n"
    code, out, err = run_argv(new, command)
    if code == 127 and "command not found" in err:
        return 127, out, f"chroot: failed to run command '{command[0]}': No such file or directory\n"
    return code, out, err


def _uname(ctx: Ctx, args: list[str]) -> Result:
    return 0, (ctx.view.spec.kernel if args[:1] == ["-r"] else "Linux") + "\n", ""  # gpu-wizard asks -r


def _cat(ctx: Ctx, args: list[str]) -> Result:
    out, err = "", ""
    for path in args:
        text = read_file(ctx, path)
        if text is None:
            err += f"cat: {path}: {'Is a directory' if is_dir(ctx, path) else 'No such file or directory'}\n"
        else:
            out += text
    return (1 if err else 0), out, err


def _touch(ctx: Ctx, args: list[str]) -> Result:
    for path in args:
        problem = write_file(ctx, path)
        if problem:
            return 1, "", f"touch: cannot touch '{path}': {problem}\n"
    return 0, "", ""


#: Commands that look at the node or the container: name -> (context, args) -> result (an exec sends no stdin).
_NODE_COMMANDS: dict[str, Callable[[Ctx, list[str]], Result]] = {
    "nvidia-smi": _nvidia_smi,
    "uname": _uname,
    "cat": _cat,
    "grep": _grep,
    "findmnt": _findmnt,
    "test": _test,
    "chroot": _chroot,
    "touch": _touch,
    "true": lambda ctx, args: (0, "", ""),
    "sleep": lambda ctx, args: (0, "", ""),
    "false": lambda ctx, args: (1, "", ""),
}


def run_argv(ctx: Ctx, argv: list[str]) -> Result:
    """Run one command (no shell syntax) in a context: (exit code, stdout, stderr)."""
    if not argv:
        return 0, "", ""
    cmd, args = argv[0].rpartition("/")[2], argv[1:]  # the program's base name, as a PATH lookup finds it
    if cmd in ("sh", "bash", "ash") and args[:1] == ["-c"] and len(args) >= 2:
        return run_script(ctx, args[1])
    node_command = _NODE_COMMANDS.get(cmd)
    if node_command is not None:
        return node_command(ctx, args)
    host_tool = run_host_tool(ctx.view, cmd, args) if ctx.root == "host" else None
    if host_tool is not None:
        return host_tool
    return 127, "", f"sh: {argv[0]}: command not found\n"


def run_script(ctx: Ctx, script: str) -> Result:
    """Answer one of gpu-wizard's ``sh -c`` probe scripts (see :mod:`wizard.demo.sim.probescript`)."""

    def write(path: str, text: str) -> None:
        ctx.files[path] = text

    return probescript.answer(script, lambda argv: run_argv(ctx, argv), write)
