"""``gpu-wizard support-bundle -o FILE.tar.gz``: what a support engineer asks for, in one private archive.

The files come from :meth:`Cluster.support_files` (the operator's CRs, DaemonSets, pods and their
logs, events, GPU node labels, ``nvidia-smi -q``, the diagnosis) plus gpu-wizard's own version and
plan, and the request log of the run before this one (``gpu-wizard/last-run.log``: one line per API
and registry request, secrets redacted, :mod:`wizard.requestlog`); ``MANIFEST.txt`` lists every file
with its size and says what was sampled. Never a Secret or
a credential: see :mod:`wizard.cluster.diagnosis.support`; the kubeconfig is never included. The archive is
written once, complete, with mode 0600 (:func:`wizard.atomic_write.write_private`): a repeat run
replaces it atomically. Progress goes to stderr. Exit 0 written, 2 bad input or unusable cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli.common import EXIT_OK, UsageError, version
from wizard.cli.session import cluster_options, command, load_plan, open_cluster, plan_for_cluster

if TYPE_CHECKING:
    from wizard.engine.plan import Plan


def register(sub: Any) -> None:
    """Add ``support-bundle`` to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`)."""
    bundle = sub.add_parser(
        "support-bundle",
        help="collect the operator's objects, driver logs, events, node labels and nvidia-smi -q into a .tar.gz",
    )
    cluster_options(bundle)
    bundle.add_argument("-o", "--output", required=True, metavar="FILE.tar.gz", help="the archive to write (mode 0600)")
    bundle.add_argument(
        "--answers", metavar="FILE", help="the plan to include (default: read from the live ClusterPolicy)"
    )
    bundle.set_defaults(handler=command(cmd_support_bundle))


def _target(path: str) -> Path:
    target = Path(path).expanduser()
    if not target.name.endswith((".tar.gz", ".tgz")):
        raise UsageError(f"-o {path}: the bundle is a gzip-compressed tar archive: name it FILE.tar.gz")
    if not target.parent.is_dir():
        raise UsageError(f"-o {path}: the folder {target.parent} does not exist")
    if target.is_dir():
        raise UsageError(f"-o {path}: is a folder")
    return target


def _about(plan: Plan | None, why: str) -> dict[str, bytes]:
    info = {"gpu-wizard": version(), "python": sys.version.split()[0], "plan": why}
    files = {"gpu-wizard/version.json": (json.dumps(info, indent=2) + "\n").encode()}
    if plan is not None:
        files["gpu-wizard/plan.json"] = (json.dumps(plan.answers_dict(), indent=2, sort_keys=True) + "\n").encode()
    return files


def _archive(files: dict[str, bytes]) -> bytes:
    """A .tar.gz of ``files`` (plus ``MANIFEST.txt``), every entry 0600 and owned by nobody in particular."""
    manifest = "".join(f"{len(data):>10}  {path}\n" for path, data in files.items())
    files = {"MANIFEST.txt": f"gpu-wizard support bundle: {len(files)} files\n{manifest}".encode(), **files}
    buffer = io.BytesIO()
    stamp = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(f"gpu-wizard-support/{path}")
            info.size, info.mode, info.mtime = len(data), 0o600, stamp
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


async def cmd_support_bundle(args: argparse.Namespace) -> int:
    """``gpu-wizard support-bundle``."""
    # The user's input first: a bad -o or answers file is one line before the Kubernetes client is loaded
    # (importing the facade is most of this command's CPU when it fails).
    target = _target(args.output)
    plan = load_plan(args.answers) if args.answers else None
    from wizard.atomic_write import WriteError, write_private
    from wizard.cluster.diagnosis.support import BundleFile
    from wizard.cluster.facade import ClusterError

    why = f"from {args.answers}" if plan is not None else ""
    files: dict[str, bytes] = {}
    async with open_cluster(args) as cluster:
        if plan is not None:
            from wizard.engine.answers import AnswersError

            with contextlib.suppress(AnswersError):  # a bundle is for a broken setup too: the file's plan as it is
                plan = await plan_for_cluster(cluster, plan, args.answers)
        if plan is None:
            try:
                plan, why = await cluster.live_plan(), "read from the live ClusterPolicy"
            except (ClusterError, ValueError) as exc:
                why = f"none: the live ClusterPolicy could not be read as a plan ({exc})"
        async for item in cluster.support_files(plan, about=_about(plan, why)):
            if isinstance(item, BundleFile):
                files[item.path] = item.data
            else:
                sys.stderr.write(f"gpu-wizard: support-bundle: {item}\n")
                sys.stderr.flush()
    from wizard.paths import logs_dir
    from wizard.requestlog import kept_log

    if log := kept_log(logs_dir()):  # this run's first request moved the last run's log aside
        files["gpu-wizard/last-run.log"] = log
    try:
        write_private(target, _archive(files))
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    sys.stdout.write(f"wrote {target} ({len(files) + 1} files, {target.stat().st_size // 1024} KiB, mode 0600)\n")
    return EXIT_OK
