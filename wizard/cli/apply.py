"""``gpu-wizard apply``: preflight, render, image checks, ownership, dry-run and diff, then back up, apply and follow.

The path is shared with ``gpu-wizard upgrade`` (:func:`apply_plan` and its flags, :func:`apply_flags`).
A change is written only after the person confirms it on the terminal (or passes ``--yes``); a
Helm-owned policy gets a values file and the ``helm upgrade`` that carries it instead. Before the dry-run the hosts are checked
(:mod:`wizard.cli.hostgate`). Exit codes: 0
applied (or nothing to change), 1 images missing, a host finding or the rollout failed, 2 bad input or a failed
preflight, 130 interrupted.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, UsageError
from wizard.cli.hostgate import host_gate, host_gate_flags
from wizard.cli.images import registry_flags
from wizard.cli.policy_flags import check_policy_flags, policy_flags, with_policy_flags
from wizard.cli.session import load_plan, open_cluster, plan_for_cluster, seconds, write_check
from wizard.paths import backups_dir

if TYPE_CHECKING:  # the engine (Kubernetes client, pydantic) loads when a command runs, not to parse flags
    from wizard.cluster.facade import Cluster, Preflight
    from wizard.engine.ownership import Ownership
    from wizard.engine.plan import Plan
    from wizard.engine.prior_findings import PriorFindings
    from wizard.engine.render import Rendered

DEFAULT_BACKUP_DIR = backups_dir()


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


def _may_offer_install(args: argparse.Namespace) -> bool:
    """Whether ``apply`` may ask to install a missing operator: a person at a terminal, a command that installs."""
    return hasattr(args, "install_operator") and not args.yes and not args.dry_run and sys.stdin.isatty()


NO_CHANGES = "no changes: the cluster already holds this plan"


def images_text(rendered: Rendered) -> str:
    """Before the confirmation: every image the cluster will pull for the plan, one compact line each."""
    from wizard.engine.image_lists import compact_lines

    lines = compact_lines(rendered)
    return "".join([f"images the cluster pulls ({len(lines)}):\n", *(f"  {line}\n" for line in lines)])


async def cmd_apply(args: argparse.Namespace) -> int:
    """``gpu-wizard apply``."""
    from wizard.cli.install import check_install_flags

    plan = load_plan(args.answers)
    check_policy_flags(args)  # before connecting: a bad value costs no cluster round trip
    check_install_flags(args, plan.operator.version)
    async with open_cluster(args) as cluster:
        return await apply_plan(args, cluster, await plan_for_cluster(cluster, plan, args.answers))


async def apply_plan(args: argparse.Namespace, cluster: Cluster, plan: Plan) -> int:
    """Preflight, render, image checks, ownership, dry-run and diff, then (confirmed) back up, apply and follow.

    Shared by ``apply`` and ``upgrade`` (the flags of :func:`apply_flags`).
    """
    from wizard.cluster.applying.apply import ApplyInterrupted
    from wizard.engine.operand_images import with_live_registry
    from wizard.engine.ownership import ownership_of
    from wizard.engine.render import advice_text, render

    install = bool(getattr(args, "install_operator", False))
    preflight = await cluster.preflight(plan, install_operator=install)
    if preflight.operator_missing and not install and _may_offer_install(args):
        from wizard.cluster.core.preflight import not_installed

        if await _confirm(f"{not_installed(plan.operator.version)}. Install it (--install-operator)?"):
            args.install_operator = True
            preflight = await cluster.preflight(plan, install_operator=True)
    plan = with_policy_flags(args, plan, preflight.cluster_policy)
    filled, why = with_live_registry(plan, preflight.operator_image, (preflight.cluster_policy or {}).get("spec"))
    if filled is not plan:
        sys.stderr.write(
            f"note: driver.operandRegistry: {filled.driver.operandRegistry} ({why}: every other "
            "image of the release is pulled from there too; set it in the answers to choose another)\n"
        )
        plan = filled
    for check in preflight.checks:
        if not check.ok or check.check in ("operator", "cluster-policy", "crd"):
            write_check(check, sys.stderr)
    if not preflight.ok:
        sys.stderr.write("gpu-wizard: error: preflight failed; nothing applied\n")
        return EXIT_INVALID
    rendered = render(plan, await cluster.discover())
    if rendered.advice:
        sys.stderr.write(advice_text(rendered.advice))
    _write_downgrade(plan, preflight.cluster_policy)
    if args.no_registry:
        sys.stderr.write("! images: not checked (--no-registry)\n")
    else:
        from wizard.cli.images import check_images, missing_images_refusal

        problems = await check_images(args, cluster, rendered)
        if problems and not args.allow_missing_images:
            message, hint = missing_images_refusal(problems)
            sys.stderr.write(f"gpu-wizard: error: {message}\n  hint: {hint}\n")
            return EXIT_FAILED
    go_on, prior = await host_gate(args, cluster, plan)  # nouveau, Secure Boot, noexec…: found now, not after
    if not go_on:
        return EXIT_FAILED
    if install and not preflight.operator_missing:
        sys.stderr.write("! --install-operator: a GPU Operator already runs; applying to it\n")
    if preflight.installs_operator:
        from wizard.cli.install import check_install_flags, install_and_follow

        chart = check_install_flags(args, plan.operator.version)
        return await install_and_follow(
            args, cluster, rendered, chart, _confirm, functools.partial(follow_rollout, prior=prior)
        )
    owner = ownership_of(preflight.cluster_policy)
    upgrade = next((c for c in preflight.checks if c.check == "release" and (c.data or {}).get("upgrade")), None)
    if upgrade is not None and args.override_helm:
        sys.stderr.write(f"gpu-wizard: error: --override-helm: {upgrade.message}; nothing applied\n")
        return EXIT_INVALID
    if upgrade is not None:
        write_check(upgrade, sys.stderr)
    if owner.helm and not args.override_helm:
        return await _through_helm(args, cluster, rendered, owner, preflight, prior)
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
    person = sys.stderr if getattr(args, "output", "text") == "json" else sys.stdout
    person.write(prepared.diff)
    for deletion in prepared.deletions:  # what the operator leaves behind for this plan: deleted with the apply
        person.write(f"- {deletion}\n")
    sys.stderr.write(images_text(rendered))
    from wizard.engine.exclusion import describe

    for line in describe(prepared.node_labels):  # said before the question: the apply writes these labels too
        sys.stderr.write(f"{line}\n")
    if args.dry_run:
        sys.stderr.write("dry run: the server accepted the change (dryRun=All, strict fields); nothing applied\n")
        return EXIT_OK
    deletes = (
        f" (and delete {len(prepared.leftovers)} leftover DaemonSet(s), listed above)" if prepared.leftovers else ""
    )
    if not args.yes and not await _confirm(f"Apply to context {cluster.info.context}{deletes}?"):
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
    return await follow_rollout(args, cluster, plan, prior=prior)


async def follow_rollout(
    args: argparse.Namespace, cluster: Cluster, plan: Plan, *, prior: PriorFindings | None = None
) -> int:
    """Follow the rollout to ready (0), or say why it failed, node by node (1). ``prior``: the host findings gone on
    despite before apply, per node (a pod failing there ends the rollout at once, naming the finding)."""
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
        prior=prior,
    )
    async for status in statuses:
        final = status
        printer.show(status)
    if final is not None and final.phase == "ready":
        return EXIT_OK
    from wizard.engine.textsafe import printable

    for cause in final.causes if final is not None else ():  # found before apply: each node's finding and its fix
        sys.stderr.write(f"  ✗ {printable(cause)}\n")
    from wizard.cli import diagnosis as diagnosing  # the rollout failed or stalled: say why, node by node

    diagnosing.write(await diagnosing.gather(cluster, plan), sys.stderr)
    return EXIT_FAILED


def _write_downgrade(plan: Plan, live: dict[str, Any] | None) -> None:
    """A plan that moves the live driver back is said as a warning, as every other front end says it."""
    from wizard.engine.branches import branch_checks

    version = str((((live or {}).get("spec") or {}).get("driver") or {}).get("version") or "")
    for check in branch_checks(plan, live_version=version):
        if check.check == "driver-downgrade":
            sys.stderr.write(f"warning driver-downgrade: {check.message}\n    reason: {check.hint}\n")


async def _through_helm(
    args: argparse.Namespace,
    cluster: Cluster,
    rendered: Rendered,
    owner: Ownership,
    preflight: Preflight,
    prior: PriorFindings | None = None,
) -> int:
    """A Helm-owned policy: the change as the release's values. With ``helm`` on PATH the wizard runs the ``helm
    upgrade`` itself (confirmed), deletes the driver DaemonSets the operator leaves behind and follows the rollout;
    without it (or on a dry run) it prints the commands, the leftovers' deletions among them."""
    from wizard.cluster.facade import helm_binary, helm_change, helm_values_path
    from wizard.engine.operator_install import chart_source

    target = Path(args.helm_values) if args.helm_values else helm_values_path(cluster.info.context)
    from wizard.engine.exclusion import describe

    leftovers = await cluster.helm_leftovers(rendered)
    namespace = await cluster.namespace(rendered.plan)
    labels = await cluster.exclusion_labels(rendered.plan)
    change = helm_change(
        rendered, owner, preflight.cluster_policy, target, preflight.operator_release, leftovers, namespace, labels
    )
    helm = helm_binary()
    sys.stdout.write(change.values_text)
    if helm is None or args.dry_run:
        change.write()
        then = ""
        if change.drivers_command:
            names = ", ".join(change.driver_names)
            then = f"  then the NVIDIADriver CRs the chart does not deploy ({names}):\n  {change.drivers_command}\n"
        for deletion, delete in (*change.deletions, *change.relabels()):
            then += f"  then {deletion}:\n  {delete}\n"
        sys.stderr.write(
            f"! owner: {owner.why_not_apply()}\n"
            f"not applied: the change is in {target}; carry it out with:\n  {change.command}\n{then}"
            "  (or pass --override-helm to apply directly, knowing the next helm upgrade reverts it)\n"
        )
        return EXIT_OK
    try:
        chart = chart_source(rendered.plan.operator.version, getattr(args, "chart", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sys.stderr.write(f"! owner: {owner.why_not_apply()}\nthe change goes through helm ({chart.words()})\n")
    for leftover in leftovers:
        sys.stderr.write(f"- {leftover.deletion(namespace)}\n")
    sys.stderr.write(images_text(rendered))
    for line in describe(labels):  # said before the question: the change writes these labels after the upgrade
        sys.stderr.write(f"{line}\n")
    deletes = f" (and delete {len(leftovers)} leftover DaemonSet(s), listed above)" if leftovers else ""
    question = f"Run helm upgrade of release {owner.release} in context {cluster.info.context}{deletes}?"
    if not args.yes and not await _confirm(question):
        sys.stderr.write("nothing applied\n")
        return EXIT_OK
    run = await cluster.upgrade_through_helm(
        change,
        chart,
        rendered,
        leftovers,
        helm=helm,
        backup_dir=args.backup_dir,
        allow_unverified_preinstalled=args.allow_unverified_preinstalled,
    )
    backup = f"\nbackup: {run.backup_path}" if run.backup_path else ""
    if not run.ok:
        sys.stderr.write(f"gpu-wizard: error: {run.message}{backup}\n  hint: the command was: {run.command}\n")
        return EXIT_FAILED
    sys.stderr.write(f"{run.message}{backup}\n")
    if args.no_wait:
        return EXIT_OK
    return await follow_rollout(args, cluster, rendered.plan, prior=prior)


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
    host_gate_flags(parser)
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
