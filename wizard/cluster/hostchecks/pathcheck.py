"""Node-side checks of the host paths a plan installs into, before anything is applied.

The toolkit copies ``nvidia-container-runtime`` into ``toolkit.installDir`` and containerd then
executes it from there; the containerized driver exposes its root at ``/run/nvidia/driver`` and
the validator and toolkit execute ``nvidia-smi`` and libraries from it. So each folder (or, while
it does not exist yet, its nearest existing parent, where the operand will create it) must be
writable and on a mount without ``noexec``. A read-only ``/usr/local`` (SLE Micro, other immutable
OSes) or a ``noexec`` ``/run`` breaks the install only after the rollout; checked here first.

Per node, the host probe (:mod:`wizard.cluster.probes.hostprobe`: host ``/`` read-only at ``/host``,
deleted afterwards, also on cancellation) runs one script of ``chroot /host test -e|-d`` and
``findmnt --task 1 -T`` steps for each path and its parents; plain commands, no shell loops, so the
same script runs on any host. Writability comes from the mount's own ``rw``/``ro`` flag in the
host init's mount table (``--task 1``): through the probe's read-only bind, ``test -w`` would say
"not writable" everywhere, and the bind's own flags would show ``ro`` for the root file system.
"""

from __future__ import annotations

import contextlib
import posixpath
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING

from wizard.cluster.errors import ClusterError
from wizard.cluster.probes.hostprobe import host_findmnt, run_on_hosts, truncation_check
from wizard.cluster.probes.probe import Leftover, manager_image, probe_registry
from wizard.engine.facts import ClusterFacts
from wizard.engine.hostfolders import HostPath, plan_folders
from wizard.engine.nodescript import Step, StepResult
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, IMMUTABLE_TOOLKIT_INSTALL_DIR, Plan, check_absolute_path
from wizard.engine.results import Check, Status

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session


def lineage(path: str) -> list[str]:
    """``path`` and each parent up to ``/``, nearest first."""
    out = [posixpath.normpath(path)]
    while out[-1] != "/":
        out.append(posixpath.dirname(out[-1]))
    return out


def steps_for(paths: Sequence[HostPath]) -> list[Step]:
    """The script of one node: ``test -e`` of each path, ``test -d`` and ``findmnt`` of every folder on the way."""
    steps = [Step(f"e {p.path}", ("test", "-e", p.path), host=True) for p in paths]
    for folder in dict.fromkeys(f for p in paths for f in lineage(p.path)):
        steps += [
            Step(f"d {folder}", ("test", "-d", folder), host=True),
            Step(f"m {folder}", host_findmnt(folder), host=True),
        ]
    return steps


def _fix_hint(spec: HostPath, problem: str, mount: str) -> str:
    """What to change for a folder that is read-only (``problem`` "ro") or noexec."""
    if spec.check == "toolkit-dir":
        if problem == "ro":
            return f"set toolkit.installDir to a writable path: {IMMUTABLE_TOOLKIT_INSTALL_DIR} (the SLE Micro default) or /opt/nvidia"
        return f"move toolkit.installDir to a folder on an exec mount (e.g. /opt/nvidia), or remount {mount} with exec"
    if spec.must_exist:
        return f"remount {mount} with exec, or correct hostPaths.driverInstallDir"
    return (
        f"remount {mount} with exec on the GPU nodes (the driver container always uses {DEFAULT_DRIVER_INSTALL_DIR}; "
        "driverInstallDir does not move it), or use a pre-installed host driver"
    )


def finding(spec: HostPath, results: Mapping[str, StepResult], node: str) -> Check:
    """The check of one folder on one node from its script's results.

    ``data`` carries the facts (``exists``, ``nearest``, ``mount``, ``writable``, ``noexec``) and
    ``short``: a few words for a table cell (``writable, exec``, ``noexec /run``, ``read-only /``).
    """
    ok = {name: r.exit_code == 0 for name, r in results.items()}
    exists = ok.get(f"d {spec.path}", False)
    nearest = next((f for f in lineage(spec.path) if ok.get(f"d {f}", False)), "")
    data: dict[str, object] = {"path": spec.path, "exists": exists, "nearest": nearest}

    def check(status: Status, short: str, message: str, hint: str = "") -> Check:
        return Check(spec.check, status, message, node=node, hint=hint, data={**data, "short": short})

    if not exists and ok.get(f"e {spec.path}", False):
        return check(
            Status.FAIL, "not a folder", f"{spec.path} exists but is not a folder", f"remove it or change {spec.field}"
        )
    if spec.must_exist and not exists:
        hint = f"set {spec.field} to the root of the host driver (where usr/bin/nvidia-smi is), or leave it empty for /"
        return check(
            Status.FAIL, "missing", f"{spec.path} does not exist: {spec.field} must be the host driver's root", hint
        )
    mounted = results.get(f"m {nearest}")
    fields = mounted.output.split() if mounted is not None else []
    if not nearest or mounted is None or mounted.exit_code != 0 or len(fields) < 2:
        shown = (mounted.output if mounted is not None else "")[:120]
        return check(
            Status.WARN, "mount unknown", f"cannot tell the mount of {spec.path} (findmnt: {shown or 'no answer'})"
        )
    target, options = fields[0], fields[-1].split(",")
    writable, noexec = "ro" not in options, "noexec" in options
    data.update(mount=target, options=",".join(options), writable=writable, noexec=noexec)
    where = f"{spec.path} (exists)" if exists else f"{spec.path} (to be created in {nearest})"
    problems: list[tuple[str, str]] = []
    if spec.writable and not writable:
        problems.append((f"read-only {target}", f"not writable: {nearest} is on {target}, mounted read-only"))
    if noexec:
        problems.append((f"noexec {target}", f"{target} is mounted noexec: {spec.runs} must execute from there"))
    if problems:
        hint = _fix_hint(spec, "ro" if spec.writable and not writable else "noexec", target)
        shorts, texts = zip(*problems, strict=True)
        return check(Status.FAIL, ", ".join(shorts), f"{where}: " + "; ".join(texts), hint)
    allows = "writable, exec" if spec.writable else "exec"
    flags = ",".join(o for o in options if o in ("rw", "ro"))
    return check(Status.PASS, allows, f"{where}: on {target} ({flags or 'rw'}), {allows}")


def prepare(
    plan: Plan, facts: ClusterFacts, *, toolkit_install_dir: str | None, nodes: list[str] | None
) -> tuple[list[str], list[HostPath]]:
    """The nodes to check (every GPU node unless named) and the folders; ClusterError for a bad name or path.

    The toolkit folder is ``toolkit_install_dir``, else the plan's, else the OS profile's default
    (what the rendered ClusterPolicy will say).
    """
    known = {n.name for n in facts.nodes}
    targets = sorted(nodes if nodes is not None else (n.name for n in facts.gpu_nodes))
    unknown = [n for n in targets if n not in known]
    if unknown:
        raise ClusterError(f"no node named {unknown[0]!r} in the cluster", "pick nodes from `gpu-wizard discover`")
    folders = plan_folders(plan, facts, toolkit_install_dir)
    try:
        check_absolute_path(folders[0].path)  # the toolkit's: an answers file's is checked by the plan already
    except ValueError as exc:
        raise ClusterError(f"toolkit.installDir: {exc}") from None
    return targets, folders


async def check_cluster(
    session: Session,
    plan: Plan,
    *,
    toolkit_install_dir: str | None,
    nodes: list[str] | None,
    concurrency: int,
    timeout: float,
) -> AsyncGenerator[Check, None]:
    """The path check of ``plan``'s host folders (see ``Cluster.check_paths``, which calls here): each node's
    checks as it finishes, preceded by a note when the driver folder is not checked and followed by a summary.

    Closing the generator early (or cancelling its consumer) stops the probe, which removes what it created.
    """
    facts = await session.discover()
    targets, paths = prepare(plan, facts, toolkit_install_dir=toolkit_install_dir, nodes=nodes)
    if not targets:
        yield Check("summary", Status.FAIL, "no GPU nodes found (no nvidia.com/gpu.present or NVIDIA PCI label)")
        return
    namespace = await session.namespace(plan)
    policy = await session.policy()
    registry = probe_registry(
        plan.driver.operandRegistry, (await session.known_preflight()).operator_image, plan.operator.version
    )
    image = session.probe_image or manager_image(policy, plan.operator.bundle, registry)
    if not any(p.check == "driver-dir" for p in paths):
        yield Check("driver-dir", Status.SKIP, "pre-installed driver under / (hostPaths.driverInstallDir unset)")
    failed: set[str] = set()
    steps = steps_for(paths)
    runs = run_on_hosts(
        session.gateway,
        targets,
        steps,
        namespace=namespace,
        image=image,
        timeout=timeout,
        concurrency=concurrency,
        node_labels=facts.labels_by_node(),
        policy=policy,
        policy_known=True,
    )
    async with contextlib.aclosing(runs):
        async for run in runs:
            if isinstance(run, Leftover):
                checks = [run.check()]
            elif not run.ran:
                why = run.error
                checks = [
                    Check(p.check, Status.FAIL, f"cannot check {p.path}: {why}", node=run.node, hint=run.hint)
                    for p in paths
                ]
            else:
                by_name = run.by_check(steps)
                checks = [finding(p, by_name, run.node) for p in paths]
                if run.truncated:
                    checks.append(truncation_check(run.node, run.truncated))
            for check in checks:
                if not check.ok:
                    failed.add(check.node)
                yield check
    if failed:
        shown = ", ".join(sorted(failed)[:10]) + ("…" if len(failed) > 10 else "")
        yield Check("summary", Status.FAIL, f"path problems on {len(failed)} of {len(targets)} nodes: {shown}")
    else:
        yield Check("summary", Status.PASS, f"host paths usable on all {len(targets)} nodes")
