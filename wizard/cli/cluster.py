"""``gpu-wizard discover | apply | verify | rollback | mirror``: the cluster engine on the command line.

Every command takes ``--kubeconfig``, ``--context`` (kubectl's rules) or ``--demo SCENARIO``, which
starts the built-in demo cluster in-process for the duration of the command. Exit codes: 0 all good,
1 checks failed (verification, rollout, mirror copy), 2 bad input or an unusable cluster. Errors are
one line plus a hint, never a traceback. ``apply`` (whose path ``upgrade`` shares) is carried out by
:mod:`wizard.cli.apply`, ``mirror`` by :mod:`wizard.cli.images`; both are registered here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli import fleet, reports
from wizard.cli.apply import apply_flags, cmd_apply
from wizard.cli.common import EXIT_FAILED, EXIT_OK, UsageError
from wizard.cli.images import registry_flags
from wizard.cli.install import install_flags
from wizard.cli.session import (
    cluster_options,
    command,
    load_plan,
    open_cluster,
    plan_for_cluster,
    seconds,
    write_check,
)
from wizard.cluster.errors import ClusterError

if TYPE_CHECKING:  # the engine (Kubernetes client, pydantic) loads when a command runs, not to parse flags
    from wizard.engine.results import Check


def register(sub: Any) -> None:
    """Add the cluster subcommands to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`)."""
    from wizard.cli.images import cmd_mirror

    discover = sub.add_parser("discover", help="list the cluster's nodes, GPU groups and the suggested driver mode")
    cluster_options(discover, fleet=True)
    discover.add_argument("-o", "--output", choices=("text", "json"), default="text")
    discover.add_argument(
        "--check-hosts",
        action="store_true",
        help="also run nvidia-smi on each GPU node's host (one short-lived privileged probe DaemonSet, removed after)",
    )
    discover.set_defaults(handler=command(cmd_discover))

    apply = sub.add_parser("apply", help="preflight, diff, back up and apply the plan, then follow the rollout")
    cluster_options(apply)
    apply.add_argument("--answers", required=True, metavar="FILE", help="answers file")
    apply.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="json: the rollout's progress as one JSON object per line on stdout (node upgrade states, time in state)",
    )
    apply_flags(apply)
    install_flags(apply)
    apply.set_defaults(handler=command(cmd_apply))

    verify = sub.add_parser(
        "verify",
        help="prove the driver on every GPU node (streamed checks)",
        description="Proves the driver on every GPU node: the ClusterPolicy, each node's driver pod and image, the "
        "running imageID against the registry's digest, nvidia-smi on the host, the toolkit and driver folders. "
        "Exit 0: every GPU node verified; 1: a check failed, or could not run (SKIPPED) without --allow-skipped; "
        "2: bad input or an unusable cluster; 130: interrupted.",
    )
    cluster_options(verify, fleet=True)
    verify.add_argument(
        "--answers", metavar="FILE", help="the plan to verify against (default: read from the live ClusterPolicy)"
    )
    verify.add_argument("-o", "--output", choices=("text", "json"), default="text")
    verify.add_argument("--concurrency", type=int, default=16, metavar="N", help="nodes verified at once (default 16)")
    verify.add_argument(
        "--timeout", type=seconds, default=30.0, metavar="SECONDS", help="limit for each node check (default 30)"
    )
    verify.add_argument(
        "--no-registry",
        action="store_true",
        help="do not ask the registry: the imageID-versus-registry digest checks are SKIPPED (exit 1 unless --allow-skipped)",
    )
    verify.add_argument(
        "--allow-skipped",
        action="store_true",
        help="exit 0 when checks were SKIPPED (could not run) and none failed; the skips are still listed",
    )
    verify.add_argument(
        "--probe-image", metavar="IMAGE", help="image of the host probe pods (default: the driver manager image)"
    )
    verify.add_argument(
        "-v", "--show-output", action="store_true", help="also print nvidia-smi output and image/imageID lines"
    )
    verify.add_argument(
        "--no-diagnosis",
        action="store_true",
        help="after a failure, do not read the failing nodes' driver logs and events to explain it",
    )
    registry_flags(verify)
    reports.report_flags(verify)
    verify.set_defaults(handler=command(cmd_verify))

    rollback = sub.add_parser("rollback", help="restore the custom resources exactly as a backup holds them")
    cluster_options(rollback)
    rollback.add_argument("--backup", required=True, metavar="FILE", help="backup file written by `gpu-wizard apply`")
    rollback.set_defaults(handler=command(cmd_rollback))

    mirror = sub.add_parser(
        "mirror", help="print the mirror plan for the cluster's GPU nodes; --run copies with skopeo"
    )
    cluster_options(mirror)
    mirror.add_argument("--answers", required=True, metavar="FILE", help="answers file")
    mirror.add_argument("--nodes", metavar="NODELIST.json", help="read the nodes from a file instead of the cluster")
    mirror.add_argument("--run", action="store_true", help="copy the images now (skopeo copy --all --preserve-digests)")
    registry_flags(mirror)
    mirror.set_defaults(handler=command(cmd_mirror))


async def cmd_discover(args: argparse.Namespace) -> int:
    """``gpu-wizard discover``."""
    async with open_cluster(args) as cluster:
        from wizard.engine.kernel_drift import kernel_drift

        facts = await cluster.discover()
        info = cluster.info
        preflight = await cluster.preflight()
        running = await cluster.driver_pods(preflight.operator_namespace) if preflight.crds else {}
        hosts = await cluster.host_drivers() if args.check_hosts else {}
        if fleet.active():  # the summary table's DRIVER: the live policy's plan, when there is one
            fleet.note(gpu_nodes=len(facts.gpu_nodes), driver="none installed")
            if preflight.cluster_policy is not None:
                with contextlib.suppress(ClusterError):
                    live = await cluster.live_plan()
                    fleet.note(driver=fleet.driver_words(live.mode.value, live.driver.version))
    drift = kernel_drift(facts, running)
    for item in drift:
        sys.stderr.write(f"! kernel drift: {item.message()}\n")
    from wizard.engine.plan import DEFAULT_RELEASE

    mode = facts.recommend_mode(hosts)
    groups = facts.groups(DEFAULT_RELEASE)
    if args.output == "json":
        doc = {
            "context": info.context,
            "server": info.server,
            "demo": info.demo,
            "nodes": [
                {
                    "name": n.name,
                    "gpu": n.gpu,
                    "gpuProduct": n.gpu_product,
                    "gpuCount": n.gpu_count,
                    "kernel": n.kernel,
                    "os": f"{n.os_id}{n.os_version}",
                    "deployDriver": n.deploy_driver,
                    **({"hostDriver": hosts.get(n.name, "")} if args.check_hosts and n.gpu else {}),
                }
                for n in facts.nodes
            ],
            "groups": [{"kernel": g.kernel, "tagOS": g.tag_os, "nodes": [n.name for n in g.nodes]} for g in groups],
            "recommendedMode": {"value": mode.value, "reason": mode.reason},
            "kernelDrift": [{"node": d.node, "kernel": d.kernel, "image": d.image} for d in drift],
        }
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return EXIT_OK
    rows = [("NODE", "GPU", "KERNEL", "OS", "DRIVER-LABEL")]
    rows += [
        (
            n.name,
            f"{n.gpu_count} × {n.gpu_product}" if n.gpu else "-",
            n.kernel,
            f"{n.os_id} {n.os_version}",
            n.deploy_driver
            or (f"host {hosts[n.name]}" if hosts.get(n.name) else ("host: none" if n.name in hosts else "-")),
        )
        for n in facts.nodes
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        sys.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    sys.stdout.write(
        f"\n{len(facts.gpu_nodes)} GPU nodes of {len(facts.nodes)} in {len(groups)} (kernel, OS) groups:\n"
    )
    for group in groups:
        sys.stdout.write(f"  {group.count:5d} × {group.tag_os} {group.kernel}\n")
    sys.stdout.write(f"suggested mode: {mode.value} ({mode.reason})\n")
    return EXIT_OK


async def cmd_verify(args: argparse.Namespace) -> int:
    """``gpu-wizard verify``."""
    from wizard.cli.images import registry_client

    if args.concurrency < 1:
        raise UsageError(f"--concurrency: {args.concurrency} is not a positive number of nodes")
    plan = load_plan(args.answers) if args.answers else None
    from wizard.engine.results import LogLine

    checks: list[Check] = []
    output: dict[str, list[str]] = {}
    pending: dict[str, list[str]] = {}  # a node's raw lines come before the check they belong to
    raw: dict[tuple[str, str], list[str]] = {}
    started = time.time()
    async with open_cluster(args) as cluster, contextlib.AsyncExitStack() as stack:
        if args.probe_image:
            cluster.probe_image = args.probe_image
        plan = await plan_for_cluster(cluster, plan, args.answers) if plan else await cluster.live_plan()
        registry = None
        if not args.no_registry:
            client = registry_client(args, cluster, plan, timeout=args.timeout)
            registry = await stack.enter_async_context(client)
        stream = cluster.verify(
            plan,
            registry=registry,
            no_registry="--no-registry was given" if args.no_registry else "",
            concurrency=args.concurrency,
            timeout=args.timeout,
        )
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, LogLine):
                    output.setdefault(item.node, []).append(item.text)
                    pending.setdefault(item.node, []).append(item.text)
                    if args.show_output and args.output == "text":
                        sys.stdout.write(f"    {item.node} | {item.text}\n")
                    continue
                checks.append(item)
                if item.node in pending:
                    raw.setdefault((item.node, item.check), []).extend(pending.pop(item.node))
                if args.output == "text":
                    write_check(item)
        diagnosis: list[Check] = []
        not_applied = any(
            c.check == "plan-applied" and not c.ok for c in checks
        )  # no node was judged: no pod to explain
        if not args.no_diagnosis and not not_applied and not all(c.ok for c in checks):
            from wizard.cli import diagnosis as diagnosing

            failed = sorted({c.node for c in checks if not c.ok and c.node})
            diagnosis = await diagnosing.gather(
                cluster, plan, nodes=failed or None, timeout=max(60.0, args.timeout * 2)
            )
            if args.output == "text":
                diagnosing.write(diagnosis, sys.stdout)
        info = cluster.info
    from wizard.engine.results import Status

    skipped = [c for c in checks if c.status is Status.SKIP and c.check != "summary"]
    ok = all(c.ok for c in checks) and (args.allow_skipped or not skipped)
    fleet.note(
        gpu_nodes=len({c.node for c in checks if c.node}),
        driver=fleet.driver_words(plan.mode.value, plan.driver.version),
    )
    if reports.wanted(args):
        suite = reports.Suite("verify", info.context, reports.cases_from_checks([*checks, *diagnosis], raw), started)
        reports.record(args, suite)
    if args.output == "json":
        from wizard.cli.diagnosis import attach

        report = {
            "context": info.context,
            "server": info.server,
            "demo": info.demo,
            "ok": ok,
            "verified": ok and not skipped,
            "skipped": [
                {"check": c.check, "node": c.node, "reason": str(c.data.get("reason") or c.message)} for c in skipped
            ],
            "plan": plan.answers_dict(),
            "checks": attach([c.as_dict() for c in checks], diagnosis),
            "diagnosis": [c.as_dict() for c in diagnosis],
            "output": output,
        }
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif skipped and ok:
        sys.stderr.write(f"gpu-wizard: warning: {len(skipped)} checks SKIPPED; exit 0 because of --allow-skipped\n")
    elif skipped and all(c.ok for c in checks):
        sys.stderr.write(
            f"gpu-wizard: {len(skipped)} checks could not run (SKIPPED): not verified; "
            "fix their cause, or pass --allow-skipped to accept them\n"
        )
    return EXIT_OK if ok else EXIT_FAILED


async def cmd_rollback(args: argparse.Namespace) -> int:
    """``gpu-wizard rollback``."""

    from wizard.cluster.applying.backup import read_backup

    backup = read_backup(Path(args.backup))  # a damaged or foreign file is refused before connecting
    async with open_cluster(args) as cluster:
        for line in await cluster.rollback(backup):
            sys.stdout.write(line + "\n")
    return EXIT_OK
