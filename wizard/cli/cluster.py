"""``gpu-wizard discover | apply | verify | rollback | mirror``: the cluster engine on the command line.

Every command takes ``--kubeconfig``, ``--context`` (kubectl's rules) or ``--demo SCENARIO``, which
starts the built-in demo cluster in-process for the duration of the command. Exit codes: 0 all good,
1 checks failed (verification, rollout, mirror copy), 2 bad input or an unusable cluster. Errors are
one line plus a hint, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, UsageError
from wizard.cli.images import registry_flags
from wizard.cli.policy_flags import check_policy_flags, policy_flags, with_policy_flags
from wizard.cli.session import (
    cluster_options,
    command,
    load_plan,
    open_cluster,
    seconds,
    write_check,
)
from wizard.paths import backups_dir

if TYPE_CHECKING:  # the engine (Kubernetes client, pydantic) loads when a command runs, not to parse flags
    from wizard.cluster.facade import Cluster
    from wizard.engine.ownership import Ownership
    from wizard.engine.plan import Plan
    from wizard.engine.render import Rendered
    from wizard.engine.results import Check

DEFAULT_BACKUP_DIR = backups_dir()


def register(sub: Any) -> None:
    """Add the cluster subcommands to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`)."""
    from wizard.cli.images import cmd_mirror

    discover = sub.add_parser("discover", help="list the cluster's nodes, GPU groups and the suggested driver mode")
    cluster_options(discover)
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
    apply.set_defaults(handler=command(cmd_apply))

    verify = sub.add_parser("verify", help="prove the driver on every GPU node (streamed checks)")
    cluster_options(verify)
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

    render = sub.choices.get("render")
    if render is not None:
        cluster_options(render)


async def cmd_discover(args: argparse.Namespace) -> int:
    """``gpu-wizard discover``."""
    from wizard.cluster.upgrades import running_driver_images
    from wizard.engine.upgrade import kernel_drift

    async with open_cluster(args) as cluster:
        facts = await cluster.discover()
        info = cluster.info
        preflight = await cluster.preflight()
        running = await running_driver_images(cluster, preflight.operator_namespace) if preflight.crds else {}
        hosts = await cluster.host_drivers() if args.check_hosts else {}
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


async def _confirm(question: str) -> bool:
    """Ask on the terminal without blocking the event loop: Ctrl-C ends the command at once; EOF is no."""
    if not sys.stdin.isatty():
        raise UsageError("refusing to change the cluster without confirmation: stdin is not a terminal; pass --yes")
    import asyncio  # only where a loop runs: parsing the flags stays light
    import os

    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[bytes] = loop.create_future()
    stdin = sys.stdin.fileno()

    def readable() -> None:
        if not answer.done():
            try:
                answer.set_result(os.read(stdin, 4096))
            except OSError:
                answer.set_result(b"")  # the terminal went away: no answer is no

    loop.add_reader(stdin, readable)
    try:
        line = await answer
    finally:
        loop.remove_reader(stdin)
    if not line:
        sys.stderr.write("\n")  # EOF (Ctrl-D): end the prompt's line
    return line.decode("utf-8", "replace").strip().lower() in ("y", "yes")


NO_CHANGES = "no changes: the cluster already holds this plan"


async def cmd_apply(args: argparse.Namespace) -> int:
    """``gpu-wizard apply``."""
    plan = load_plan(args.answers)
    check_policy_flags(args)  # before connecting: a bad value costs no cluster round trip
    async with open_cluster(args) as cluster:
        return await apply_plan(args, cluster, plan)


async def apply_plan(args: argparse.Namespace, cluster: Cluster, plan: Plan) -> int:
    """Preflight, render, image checks, ownership, dry-run and diff, then (confirmed) back up, apply and follow.

    Shared by ``apply`` and ``upgrade`` (the flags of :func:`apply_flags`).
    """
    from wizard.cluster.apply import ApplyInterrupted
    from wizard.engine.ownership import ownership_of
    from wizard.engine.render import advice_text, render

    preflight = await cluster.preflight(plan)
    plan = with_policy_flags(args, plan, preflight.cluster_policy)
    for check in preflight.checks:
        if not check.ok or check.check in ("operator", "cluster-policy", "crd"):
            write_check(check, sys.stderr)
    if not preflight.ok:
        sys.stderr.write("gpu-wizard: error: preflight failed; nothing applied\n")
        return EXIT_INVALID
    rendered = render(plan, await cluster.discover())
    if rendered.advice:
        sys.stderr.write(advice_text(rendered.advice))
    if args.no_registry:
        sys.stderr.write("! images: not checked (--no-registry)\n")
    else:
        from wizard.cli.images import check_images, missing_images_refusal

        problems = await check_images(args, cluster, rendered)
        if problems and not args.allow_missing_images:
            message, hint = missing_images_refusal(problems)
            sys.stderr.write(f"gpu-wizard: error: {message}\n  hint: {hint}\n")
            return EXIT_FAILED
    owner = ownership_of(preflight.cluster_policy)
    if owner.helm and not args.override_helm:
        return _through_helm(args, cluster, rendered, owner, preflight.cluster_policy)
    if owner.manager != "none":
        sys.stderr.write(f"! owner: {owner.why_not_apply()}\n")
    prepared = await cluster.prepare_apply(rendered, force_conflicts=args.force_conflicts)
    if not prepared.ok:
        for error in prepared.errors:
            sys.stderr.write(f"✗ validation: {error}\n")
        sys.stderr.write("gpu-wizard: error: validation failed; nothing applied\n")
        return EXIT_INVALID
    if not prepared.changed:  # nothing to write: no backup, no apply
        sys.stdout.write(NO_CHANGES + "\n")
        sys.stderr.write(f"{NO_CHANGES}; nothing applied\n")
        return EXIT_OK
    # with -o json stdout carries only JSON (the rollout's progress lines): the diff is for the person
    (sys.stderr if getattr(args, "output", "text") == "json" else sys.stdout).write(prepared.diff)
    if args.dry_run:
        sys.stderr.write("dry run: the server accepted the change (dryRun=All, strict fields); nothing applied\n")
        return EXIT_OK
    if not args.yes and not await _confirm(f"Apply to context {cluster.info.context}?"):
        sys.stderr.write("nothing applied\n")
        return EXIT_OK
    try:
        result = await cluster.apply(
            prepared, backup_dir=args.backup_dir, allow_unverified_preinstalled=args.allow_unverified_preinstalled
        )
    except ApplyInterrupted as exc:
        sys.stderr.write(f"gpu-wizard: {exc.message}\nbackup: {exc.result.backup_path}\n  hint: {exc.hint}\n")
        return EXIT_INTERRUPTED  # run_interruptibly then reports the interrupt itself
    sys.stderr.write(f"{result.message}\nbackup: {result.backup_path}\n")
    if not result.ok:
        return EXIT_FAILED
    if args.no_wait:
        return EXIT_OK
    from wizard.cli.rollout_progress import REFRESH, RolloutPrinter

    stall = args.stall_window or args.wait_timeout
    json_out = sys.stdout if getattr(args, "output", "text") == "json" else None
    printer = RolloutPrinter(sys.stderr, stall_window=stall, json_out=json_out)
    final = None
    statuses = cluster.rollout(
        plan,
        timeout=args.wait_timeout,
        crash_window=args.crash_window,
        stall_window=args.stall_window,
        heartbeat=REFRESH,
    )
    async for status in statuses:
        final = status
        printer.show(status)
    if final is not None and final.phase == "ready":
        return EXIT_OK
    from wizard.cli import diagnosis as diagnosing  # the rollout failed or stalled: say why, node by node

    diagnosing.write(await diagnosing.gather(cluster, plan), sys.stderr)
    return EXIT_FAILED


def _through_helm(
    args: argparse.Namespace, cluster: Cluster, rendered: Rendered, owner: Ownership, live: dict[str, Any] | None
) -> int:
    """A Helm-owned policy: write the change as the release's values and print the ``helm upgrade`` that carries it."""
    from wizard.cluster.facade import helm_change, helm_values_path

    target = Path(args.helm_values) if args.helm_values else helm_values_path(cluster.info.context)
    change = helm_change(rendered, owner, live, target)
    change.write()
    sys.stdout.write(change.values_text)
    then = ""
    if change.drivers_command:
        names = ", ".join(change.driver_names)
        then = f"  then the NVIDIADriver CRs the chart does not deploy ({names}):\n  {change.drivers_command}\n"
    sys.stderr.write(
        f"! owner: {owner.why_not_apply()}\n"
        f"not applied: the change is in {target}; carry it out with:\n  {change.command}\n{then}"
        "  (or pass --override-helm to apply directly, knowing the next helm upgrade reverts it)\n"
    )
    return EXIT_OK


def apply_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of every command that applies a plan (``apply``, ``upgrade``)."""
    parser.add_argument("--dry-run", action="store_true", help="stop after the server-side dry-run and the diff")
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument(
        "--backup-dir",
        default=str(DEFAULT_BACKUP_DIR),
        metavar="DIR",
        help=f"where the backup goes (default {DEFAULT_BACKUP_DIR})",
    )
    parser.add_argument(
        "--allow-unverified-preinstalled",
        action="store_true",
        help="apply pre-installed mode even where host nvidia-smi did not pass",
    )
    parser.add_argument("--force-conflicts", action="store_true", help="take over fields another field manager owns")
    parser.add_argument(
        "--override-helm",
        action="store_true",
        help="apply directly although a Helm release owns the ClusterPolicy (its next upgrade reverts the change)",
    )
    parser.add_argument(
        "--helm-values",
        metavar="FILE",
        help="where the Helm values go when Helm owns the policy (default: state folder)",
    )
    parser.add_argument("--no-registry", action="store_true", help="skip the check that each driver image exists")
    parser.add_argument(
        "--allow-missing-images",
        action="store_true",
        help="apply although a driver image is missing or could not be checked (the rollout will fail there)",
    )
    registry_flags(parser)
    policy_flags(parser)
    parser.add_argument("--no-wait", action="store_true", help="do not follow the rollout")
    parser.add_argument(
        "--wait-timeout", type=seconds, default=1800.0, metavar="SECONDS", help="rollout limit (default 1800)"
    )
    parser.add_argument(
        "--crash-window",
        type=seconds,
        default=300.0,
        metavar="SECONDS",
        help="a driver container crash-looping this long fails the rollout (default 300)",
    )
    parser.add_argument(
        "--stall-window",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="a node in one upgrade state this long is named; nothing changing this long fails the rollout "
        "(default: the --wait-timeout)",
    )


async def cmd_verify(args: argparse.Namespace) -> int:
    """``gpu-wizard verify``."""
    from wizard.cli.images import registry_client

    if args.concurrency < 1:
        raise UsageError(f"--concurrency: {args.concurrency} is not a positive number of nodes")
    plan = load_plan(args.answers) if args.answers else None
    from wizard.engine.results import LogLine

    checks: list[Check] = []
    output: dict[str, list[str]] = {}
    async with open_cluster(args) as cluster, contextlib.AsyncExitStack() as stack:
        if args.probe_image:
            cluster.probe_image = args.probe_image
        plan = plan or await cluster.live_plan()
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
                    if args.show_output and args.output == "text":
                        sys.stdout.write(f"    {item.node} | {item.text}\n")
                    continue
                checks.append(item)
                if args.output == "text":
                    write_check(item)
        diagnosis: list[Check] = []
        if not args.no_diagnosis and not all(c.ok for c in checks):
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
    from pathlib import Path

    from wizard.cluster.backup import read_backup

    backup = read_backup(Path(args.backup))  # a damaged or foreign file is refused before connecting
    async with open_cluster(args) as cluster:
        for line in await cluster.rollback(backup):
            sys.stdout.write(line + "\n")
    return EXIT_OK
