"""``gpu-wizard upgrade`` (a driver upgrade planned node group by node group) and ``check-kernel``.

``upgrade`` reads the running plan from the live ClusterPolicy (or ``--answers``), shows per node group
the current and the new image with both tags' status in the registry, the OS-tag changes a new
operator release brings, the upgradePolicy in force, the GPU workloads that will be evicted and an
estimate of the duration; it refuses while a new image is missing. ``check-kernel`` says, before an OS
update, whether the precompiled image for the new kernel exists.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import TYPE_CHECKING, Any

from wizard.cli import fleet
from wizard.cli.apply import apply_flags, apply_plan
from wizard.cli.common import EXIT_FAILED, EXIT_OK, UsageError
from wizard.cli.images import registry_client, registry_flags
from wizard.cli.install import chart_flag
from wizard.cli.session import cluster_options, command, load_plan, open_cluster, plan_for_cluster

KERNEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}", re.ASCII)
"""A kernel release that can stand in an image tag (with the version and OS tag around it)."""

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.cluster.upgrading.upgrades import UpgradeReport
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.plan import Plan
    from wizard.registry.images import ImageStatus


def register(sub: Any) -> None:
    """Add ``upgrade`` and ``check-kernel`` to ``gpu-wizard``'s subparsers."""
    upgrade = sub.add_parser(
        "upgrade", help="plan a driver upgrade per node group (images, evictions, duration); apply it unless --dry-run"
    )
    cluster_options(upgrade)
    upgrade.add_argument("--driver", required=True, metavar="VERSION", help="the new driver version")
    upgrade.add_argument("--operator", metavar="vX.Y.Z", help="the operator release after the upgrade (naming rules)")
    upgrade.add_argument("--answers", metavar="FILE", help="the running plan (default: read from the live policy)")
    upgrade.add_argument("-o", "--output", choices=("text", "json"), default="text")
    apply_flags(upgrade)  # --dry-run prints the plan and changes nothing; otherwise the same path as apply
    chart_flag(upgrade)  # a Helm-owned install: the new release's chart for its helm upgrade
    upgrade.set_defaults(handler=command(cmd_upgrade))

    check = sub.add_parser(
        "check-kernel", help="before an OS update: does the precompiled driver image for KERNEL exist?"
    )
    cluster_options(check, fleet=True)
    check.add_argument("kernel", metavar="KERNEL", help="the kernel release after the update (uname -r)")
    check.add_argument("--os", metavar="ID:VERSION", help="OS of the nodes, e.g. sles:15.5 (default: the GPU nodes')")
    check.add_argument("--answers", metavar="FILE", help="the plan (default: read from the live policy)")
    registry_flags(check)
    check.set_defaults(handler=command(cmd_check_kernel))


def report_json(report: UpgradeReport) -> dict[str, Any]:
    """The upgrade plan as JSON."""
    plan = report.plan

    def image(status: ImageStatus | None) -> dict[str, Any] | None:
        if status is None:
            return None
        return {"exists": status.ok, "error": status.target.error or None, "mirrorable": status.mirrorable}

    return {
        "driver": {"from": plan.current.driver.version, "to": plan.target.driver.version},
        "operator": {"from": plan.current.operator.version, "to": plan.target.operator.version},
        "owner": {"manager": report.ownership.manager, "release": report.ownership.release},
        "registryChecked": report.registry_checked,
        "groups": [
            {
                "kernel": g.kernel,
                "nodes": list(g.nodes),
                "from": g.old_image,
                "to": g.new_image,
                "changes": g.changes,
                "fromStatus": image(report.old_images.get(g.old_image)),
                "toStatus": image(report.new_images.get(g.new_image)),
            }
            for g in plan.groups
        ],
        "osTagChanges": plan.os_tag_changes(),
        "upgradePolicy": plan.policy.__dict__,
        "evictions": plan.evictions,
        "estimateMinutes": plan.estimate_minutes(),
        "notes": plan.notes,
    }


async def cmd_upgrade(args: argparse.Namespace) -> int:
    """``gpu-wizard upgrade``."""
    from pydantic import ValidationError

    from wizard.cli.policy_flags import check_policy_flags, with_policy_flags

    current = load_plan(args.answers) if args.answers else None
    check_policy_flags(args)  # before connecting, and before the cluster code loads (a second of CPU)
    from wizard.cluster.upgrading.upgrades import report_lines as upgrade_lines
    from wizard.cluster.upgrading.upgrades import status_word
    from wizard.engine.answers import plan_errors
    from wizard.engine.upgrade import UpgradePolicyError, upgrade_target

    async with open_cluster(args) as cluster:
        try:
            running = await plan_for_cluster(cluster, current, args.answers) if current else await cluster.live_plan()
            target = upgrade_target(running, driver_version=args.driver, operator_release=args.operator)
        except ValidationError as exc:
            first = plan_errors(exc)[0]
            raise UsageError(f"--driver/--operator: {first.field or 'driver'}: {first.message}") from None
        target = with_policy_flags(args, target, (await cluster.preflight(target)).cluster_policy)
        try:
            if args.no_registry:
                report = await cluster.prepare_upgrade(target, current=running)
            else:
                async with registry_client(args, cluster, running) as registry:
                    report = await cluster.prepare_upgrade(target, current=running, registry=registry)
        except UpgradePolicyError as exc:
            raise UsageError(f"the live ClusterPolicy's {exc}") from None
        if args.output == "json":
            sys.stdout.write(json.dumps(report_json(report), indent=2) + "\n")
        else:
            sys.stdout.write("\n".join(upgrade_lines(report)) + "\n")
        missing = report.missing
        if missing and not args.allow_missing_images:
            for status in missing:
                sys.stderr.write(f"✗ new image {status.image} cannot be pulled ({status_word(status, True)})\n")
            sys.stderr.write(
                "gpu-wizard: error: the upgrade is refused while a new image is missing: mirror it first "
                "(`gpu-wizard mirror --answers FILE --run` with the new version), or pass --allow-missing-images\n"
            )
            return EXIT_FAILED
        if args.dry_run:
            sys.stderr.write("dry run: nothing was changed\n")
            return EXIT_OK
        if not report.plan.changing_nodes:
            sys.stderr.write("nothing to upgrade: no GPU node changes image\n")
            return EXIT_OK
        return await apply_plan(args, cluster, report.plan.target)


async def _plan_to_check(cluster: Cluster, args: argparse.Namespace, facts: ClusterFacts) -> tuple[Plan, str]:
    """The plan whose images ``check-kernel`` checks, and where it came from: the answers file, else the live
    ClusterPolicy, else the defaults a newcomer gets for these nodes (``wizard.engine.defaults``)."""
    if args.answers:
        return await plan_for_cluster(cluster, load_plan(args.answers), args.answers), args.answers
    preflight = await cluster.preflight()
    if preflight.cluster_policy is not None:
        return await cluster.live_plan(), "the live ClusterPolicy"
    from pydantic import ValidationError

    from wizard.engine.answers import plan_errors
    from wizard.engine.defaults import default_answers
    from wizard.engine.plan import Plan

    answers = default_answers(
        facts,
        release=preflight.operator_release,
        namespace=preflight.operator_namespace,
        operator_image=preflight.operator_image,
    )
    driver = answers.get("driver") or {}
    if driver.get("source") and not driver.get("repository"):
        driver["repository"] = driver["source"]  # no target named yet: the source is where the image would come from
    try:
        return Plan.model_validate(answers), "the defaults for these nodes (no ClusterPolicy, no --answers)"
    except ValidationError as exc:
        first = plan_errors(exc)[0]
        raise UsageError(f"check-kernel: the defaults for these nodes: {first.field}: {first.message}") from None


async def cmd_check_kernel(args: argparse.Namespace) -> int:
    """``gpu-wizard check-kernel KERNEL``: the image for KERNEL in the registry; where none is, the vendor request
    (the node running that kernel, its GPU model) and, where NVIDIA's driver container builds that OS, the recipe."""
    from wizard.engine.build_recipe import recipe_for, recipe_lines
    from wizard.engine.catalog import support_request, tuple_status
    from wizard.engine.hostdoctor import supported_branches
    from wizard.engine.naming import os_tag, precompiled_image

    if not KERNEL_RE.fullmatch(args.kernel):
        raise UsageError(
            f"KERNEL: {args.kernel!r} is not a kernel release as `uname -r` prints it (ASCII letters, digits, '.', '_', '-')"
        )
    if args.answers:
        load_plan(args.answers)  # its mistakes said before connecting
    if args.os and not re.fullmatch(r"[a-z][a-z0-9-]*:[0-9][0-9a-z.]*", args.os, re.ASCII):
        raise UsageError(f"--os: {args.os!r} is not ID:VERSION (e.g. sles:15.5)")
    async with open_cluster(args) as cluster:
        facts = await cluster.discover()
        fleet.note(gpu_nodes=len(facts.gpu_nodes))
        plan, plan_from = await _plan_to_check(cluster, args, facts)
        if not plan.precompiled:
            raise UsageError(
                f"check-kernel: the plan ({plan_from}) is in {plan.mode.value} mode; only precompiled images are "
                "built per kernel"
            )
        release = plan.operator.version
        on_kernel = [n for n in facts.gpu_nodes if n.kernel == args.kernel]
        if args.os:
            os_id, _, version_id = args.os.partition(":")
            tags = {os_tag(os_id, version_id, release)}
        else:
            tags = {n.tag_os(release) for n in on_kernel} or set(facts.os_tags(release))
            if not tags:
                raise UsageError("check-kernel: no GPU node to read the OS from; pass --os ID:VERSION")
        spec = plan.driver
        fleet.note(driver=fleet.driver_words(plan.mode.value, spec.version))
        images = {tag: precompiled_image(spec.repository, spec.image, spec.version, args.kernel, tag) for tag in tags}
        sources = (  # where the mirror plan copies from: a tag there needs a copy, not a build
            {tag: precompiled_image(spec.source, spec.image, spec.version, args.kernel, tag) for tag in tags}
            if spec.source and spec.source != spec.repository
            else {}
        )
        async with registry_client(args, cluster, plan) as registry:
            answers = await registry.check_many([*images.values(), *sources.values()])
    sys.stderr.write(f"plan: {plan_from}\n")
    failed = False
    default_version = supported_branches(release)[1]
    for tag, image in sorted(images.items()):
        answer = answers[image]
        catalog = tuple_status(spec.version, args.kernel, tag)
        if answer.exists:
            sys.stdout.write(f"✓ {image}: in the registry (catalog: {catalog})\n")
            continue
        failed = True
        state = f"cannot check ({answer.error})" if answer.error else "not in the registry"
        sys.stdout.write(f"✗ {image}: {state} (catalog: {catalog})\n")
        checked = [f"{image}: {state}"]
        source = sources.get(tag)
        if source is not None:
            held = answers[source]
            if held.exists:
                then = f" --answers {args.answers}" if args.answers else ""
                sys.stdout.write(f"  its source holds it: {source}: copy it (gpu-wizard mirror{then} --run)\n")
                continue
            checked.append(f"{source}: {f'cannot check ({held.error})' if held.error else 'not in the source either'}")
        if catalog == "validated":
            continue
        seed = next((n for n in on_kernel if n.tag_os(release) == tag), None)
        node = seed.name if seed else "(after the OS update)"
        products = sorted({n.gpu_product for n in facts.gpu_nodes if n.tag_os(release) == tag and n.gpu_product})
        product = seed.gpu_product if seed and seed.gpu_product else " / ".join(products)
        sys.stdout.write(
            f"GPU model: {product or 'unknown (no nvidia.com/gpu.product label)'}"
            + (
                f" (read from {seed.name}, which runs {args.kernel})\n"
                if seed and seed.gpu_product
                else " (read from the GPU nodes of this OS)\n"
                if product
                else "\n"
            )
        )
        recipe = recipe_for(spec.repository, spec.image, spec.version, args.kernel, tag, version_hint=default_version)
        if recipe is not None:
            sys.stdout.write("\n".join(recipe_lines(recipe)) + "\n\nOr ask NVIDIA to publish it:\n")
        else:
            sys.stdout.write(f"No public build recipe exists for {tag}: send this request to the image's vendor:\n")
        sys.stdout.write(support_request(node, args.kernel, tag, product, spec.version, checked=checked))
    return EXIT_FAILED if failed else EXIT_OK
