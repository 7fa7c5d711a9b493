"""``gpu-wizard apply --install-operator [--chart REF]``: install the GPU Operator with the plan's values (day 0).

A cluster without the operator (no CRDs, or CRDs and no operator Deployment) gets the chosen release's
chart as a Helm release whose values are the plan's, so the operator's first reconcile renders the
planned driver, never the chart's default. With ``helm`` on PATH the wizard runs ``helm upgrade
--install`` itself (``--wait`` off) and follows the rollout; without it, it prints the exact command and
the values file and waits for the operator Deployment to appear. Later applies find the ClusterPolicy
Helm-owned and go through Helm.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wizard.cli.common import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster
    from wizard.engine.operator_install import ChartSource
    from wizard.engine.plan import Plan
    from wizard.engine.render import Rendered


def install_flags(parser: argparse.ArgumentParser) -> None:
    """``apply``'s flags for installing the operator."""
    parser.add_argument(
        "--install-operator",
        action="store_true",
        help="where no GPU Operator runs, install the plan's release as a Helm release with the plan's values",
    )
    chart_flag(parser)


def chart_flag(parser: argparse.ArgumentParser) -> None:
    """``--chart``: the chart helm installs, or upgrades a Helm-owned install with (``apply``, ``upgrade``)."""
    parser.add_argument(
        "--chart",
        metavar="REF",
        help="the chart to install, or to upgrade a Helm-owned install with (a local chart folder, a .tgz or an "
        "oci:// reference; air-gapped); default: the release's chart from NVIDIA's Helm repository",
    )


def check_install_flags(args: argparse.Namespace, release: str) -> ChartSource | None:
    """The chart ``--chart`` names (checked before connecting); UsageError for a bad one or one without install."""
    from wizard.engine.operator_install import chart_source

    chart = getattr(args, "chart", None)
    try:
        source = chart_source(release, chart)  # checked here also for a Helm-owned apply's helm upgrade
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return source if getattr(args, "install_operator", False) else None


async def install_and_follow(
    args: argparse.Namespace,
    cluster: Cluster,
    rendered: Rendered,
    chart: ChartSource | None,
    confirm: Callable[[str], Awaitable[bool]],
    follow: Callable[[argparse.Namespace, Cluster, Plan], Awaitable[int]],
) -> int:
    """Show what will be installed, confirm, install (helm, or the printed command and a wait), then ``follow``
    the rollout (``apply``'s own follower and confirmation, handed in: apply is the command that calls this)."""
    from wizard.cluster.facade import helm_binary, install_values_path
    from wizard.engine.exclusion import describe, label_argv
    from wizard.engine.operator_install import operator_install
    from wizard.engine.textsafe import shell_command

    install = operator_install(rendered, chart)
    values_path = Path(args.helm_values) if args.helm_values else install_values_path(cluster.info.context)
    labels = await cluster.exclusion_labels(rendered.plan)  # written before the install: the first reconcile obeys
    out = sys.stderr if getattr(args, "output", "text") == "json" else sys.stdout
    out.write("".join(f"{line}\n" for line in install.summary()))
    out.write(f"  values: {values_path}\n")
    out.write("".join(f"  first, {line}\n" for line in describe(labels)))
    helm = helm_binary()
    if args.dry_run:
        from wizard.cluster.facade import write_install

        write_install(install, values_path)
        first = "".join(f"  {shell_command(label_argv(node))}\n" for node in sorted(labels))
        out.write(
            f"dry run: nothing installed; the command{'s' if first else ''}:\n{first}"
            f"  {install.command(str(values_path), cluster.helm_kube)}\n"
        )
        return EXIT_OK
    if not args.yes and not await confirm(
        f"Install GPU Operator {install.release} into context {cluster.info.context}?"
    ):
        sys.stderr.write("nothing installed\n")
        return EXIT_OK

    def said(command: str) -> None:
        sys.stderr.write(
            f"helm is not on PATH: run this command where helm is (values in {values_path}); gpu-wizard waits "
            f"up to {args.wait_timeout:.0f} s for the operator:\n  {command}\n"
        )
        sys.stderr.flush()

    run = await cluster.install_operator(
        install, values_path, helm=helm, wait_timeout=args.wait_timeout, said=said, node_labels=labels
    )
    if not run.ok:
        sys.stderr.write(f"gpu-wizard: error: {run.message}\n  hint: the command was: {run.command}\n")
        return EXIT_FAILED
    sys.stderr.write(f"{run.message}\n")
    if args.no_wait:
        return EXIT_OK
    return await follow(args, cluster, rendered.plan)
