"""``gpu-wizard bundle --deployer helm|helmfile|argocd|flux -o DIR``: the plan as a GitOps bundle (issue 36).

The bundle is :func:`wizard.engine.gitops.gitops_bundle`'s rendering of the install ``apply --install-operator``
would carry out. With ``--nodes`` it is written offline; otherwise the nodes come from the cluster the flags name
and every image the plan needs is checked where the cluster pulls from (as ``apply`` does): an image the registry
lacks is a finding. With a local chart (``--chart DIR``) and ``helm`` on PATH the values are rendered by ``helm
template`` (offline, bounded): a refusal, or a chart object the CRD refuses, is a finding; otherwise the README and
stderr say the values were not rendered through the chart. Findings that block the plan go into ``FINDINGS`` and the exit is 1 unless
``--allow-findings``. (``support-bundle`` is the other bundle: :mod:`wizard.cli.bundle`.)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from wizard.cli.common import EXIT_FAILED, EXIT_OK, UsageError, load_nodelist
from wizard.cli.images import registry_flags
from wizard.cli.session import cluster_options, command, load_plan, open_cluster, plan_for_cluster
from wizard.engine.deployers import CHART_HELP, DEPLOYERS

_SAFE = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def register(sub: Any) -> None:
    """Add ``bundle`` to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`)."""
    bundle = sub.add_parser(
        "bundle",
        help="write the plan as a Helm, helmfile, Argo CD or Flux bundle (values, manifests, image lists, checksums)",
        epilog="exit codes: 0 written; 1 written, with findings that block the plan in FINDINGS (0 with "
        "--allow-findings); 2 invalid input or an unusable cluster, nothing written",
    )
    bundle.add_argument("--answers", required=True, metavar="FILE", help="answers file (see `answers init`)")
    bundle.add_argument("--deployer", required=True, choices=DEPLOYERS, help="the format to write")
    bundle.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write (created; empty)")
    bundle.add_argument(
        "--nodes", metavar="NODELIST.json", help="`kubectl get nodes -o json` output (default: the cluster's nodes)"
    )
    bundle.add_argument("--chart", metavar="CHART", help=f"the chart: {CHART_HELP} (default: the release's repository)")
    bundle.add_argument(
        "--allow-findings", action="store_true", help="exit 0 even when the plan has findings that block it"
    )
    bundle.add_argument("--no-registry", action="store_true", help="skip the check that each image exists")
    bundle.add_argument(
        "--git-path",
        metavar="PATH",
        help="flux: where the folder is committed in the Git source flux-system (the Kustomizations' path; "
        "default ./gpu-operator)",
    )
    cluster_options(bundle)
    registry_flags(bundle)
    bundle.set_defaults(handler=command(cmd_bundle))


def _target(path: str) -> Path:
    """The folder to write: new or empty, in a folder that exists (never overwrites a file)."""
    from wizard.engine.textsafe import printable

    target = Path(path).expanduser()
    shown = printable(path)[:200]
    if target.is_symlink() or (target.exists() and (not target.is_dir() or any(target.iterdir()))):
        raise UsageError(f"-o {shown}: exists and is not an empty folder; name a new folder")
    if not target.parent.is_dir():
        raise UsageError(f"-o {shown}: its folder does not exist")
    return target


def _git_path(path: str | None) -> str:
    """``--git-path``: a relative path inside the Git source (UsageError otherwise)."""
    from wizard.engine.gitops import DEFAULT_GIT_PATH

    if path is None:
        return DEFAULT_GIT_PATH
    parts = path.removeprefix("./").strip("/").split("/")
    if len(path) > 256 or path.startswith("/") or any(p in ("", "..") or not _SAFE.match(p) for p in parts):
        raise UsageError("--git-path: a relative folder inside the Git repository, like ./clusters/gpu/gpu-operator")
    return "./" + "/".join(parts)


async def cmd_bundle(args: argparse.Namespace) -> int:
    from wizard.atomic_write import write_files
    from wizard.engine.gitops import gitops_bundle
    from wizard.engine.operator_install import chart_source, operator_install
    from wizard.engine.render import advice_text, render

    target = _target(args.output)
    git_path = _git_path(args.git_path)
    plan = load_plan(args.answers)
    try:
        chart = chart_source(plan.operator.version, args.chart)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    missing: list[str] = []
    if args.nodes:
        from wizard.engine.answers import plan_for_nodes

        facts = load_nodelist(args.nodes)
        rendered = render(plan_for_nodes(plan, facts, args.answers), facts)
        sys.stderr.write("! images: not checked (--nodes: no cluster to check them from)\n")
    else:
        async with open_cluster(args) as cluster:
            plan = await plan_for_cluster(cluster, plan, args.answers)
            rendered = render(plan, await cluster.discover())
            if args.no_registry:
                sys.stderr.write("! images: not checked (--no-registry)\n")
            else:
                from wizard.cli.images import check_images, missing_images_refusal

                problems = await check_images(args, cluster, rendered)
                if problems:
                    message, hint = missing_images_refusal(problems)
                    missing = [f"{message.removesuffix('; nothing applied')} (hint: {hint})"]
                    missing += [f"image not in the registry: {p.image}" for p in problems]
    if rendered.advice:
        sys.stderr.write(advice_text(rendered.advice))
    from wizard.cluster.facade import check_chart, helm_binary

    install = operator_install(rendered, chart)
    checked = await check_chart(install, helm_binary())  # helm template of a local chart: what Helm would refuse
    if not checked.ran:
        sys.stderr.write(f"! chart: values not rendered through the chart ({checked.how})\n")
    try:
        bundle = gitops_bundle(rendered, args.deployer, missing, install, git_path=git_path, chart=checked)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_files(target, bundle.files)
    from wizard.engine.textsafe import printable

    release, shown = plan.operator.version, printable(str(target))
    sys.stdout.write(f"{args.deployer} bundle of GPU Operator {release}: {len(bundle.files)} files in {shown}\n")
    for line in bundle.findings:
        sys.stderr.write(f"✗ {line}\n")
    if bundle.blocked:
        sys.stderr.write(f"gpu-wizard: {len(bundle.findings)} finding(s) block this plan: see {shown}/FINDINGS\n")
        return EXIT_OK if args.allow_findings else EXIT_FAILED
    return EXIT_OK
