"""``gpu-wizard cleanup``: remove the host probe DaemonSets (their deadline Jobs, their pods) and probe pods a killed gpu-wizard left.

Found by gpu-wizard's owner label in every namespace the user may list; ``--dry-run`` only lists
them. Exit 0 when nothing is left, 1 when something could not be removed (its ``kubectl delete``
is printed), 2 on bad input or an unusable cluster. A repeat run says that nothing is left.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wizard.cli.common import EXIT_FAILED, EXIT_OK
from wizard.cli.session import cluster_options, command, open_cluster


def register(sub: Any) -> None:
    """Add ``cleanup`` to ``gpu-wizard``'s subparsers."""
    cleanup = sub.add_parser(
        "cleanup", help="remove the host probe DaemonSets and pods a killed gpu-wizard run left behind"
    )
    cluster_options(cleanup)
    cleanup.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    cleanup.add_argument("-o", "--output", choices=("text", "json"), default="text")
    cleanup.set_defaults(handler=command(cmd_cleanup))


async def cmd_cleanup(args: argparse.Namespace) -> int:
    """``gpu-wizard cleanup``."""
    async with open_cluster(args) as cluster:
        found, where = await cluster.clean_up_probes(dry_run=args.dry_run)
    failed = [f for f in found if f.error]
    if args.output == "json":
        items = [
            {"kind": f.kind, "namespace": f.namespace, "name": f.name, "node": f.node, "run": f.run}
            | ({"error": f.error, "command": f.command} if f.error else {})
            for f in found
        ]
        report = {"searched": where, "dry_run": args.dry_run, "found": items, "failed": len(failed)}
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return EXIT_FAILED if failed else EXIT_OK
    if not found:
        sys.stdout.write(f"nothing left: no gpu-wizard probe Job, DaemonSet or pod in {where}\n")
        return EXIT_OK
    verb = "would remove" if args.dry_run else "removed"
    for f in found:
        on = f" on {f.node}" if f.node else ""
        run = f" (run {f.run})" if f.run else ""
        if f.error:
            sys.stdout.write(f"✗ cannot remove {f.kind} {f.namespace}/{f.name}{on}: {f.error}; run: {f.command}\n")
        else:
            sys.stdout.write(f"✓ {verb} {f.kind} {f.namespace}/{f.name}{on}{run}\n")
    done = len(found) - len(failed)
    sys.stdout.write(
        f"{verb} {done} of {len(found)} probe objects in {where}"
        + (f"; {len(failed)} could not be removed\n" if failed else "\n")
    )
    return EXIT_FAILED if failed else EXIT_OK
