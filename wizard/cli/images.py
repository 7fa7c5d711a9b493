"""Images on the command line: ``gpu-wizard mirror``, and the registry checks of ``apply`` and ``verify``.

Every registry client built here is routed the way the cluster pulls (``Cluster.registry_options``):
through the registry mirrors of ``--registry-mirror SOURCE=MIRROR`` and the answers file's
``driver.registryMirrors`` (a runtime that pulls through a mirror, containerd's hosts.toml), and, on
the demo, those its kubeconfig's marker names, so the simulated image names are answered by the
demo's registry, never by the real hosts. This machine's registries.conf and hosts.toml mirrors,
certs.d folders and credential helpers count too (under the user's mirrors), unless
``--no-host-registry-config`` or ``driver.hostRegistryConfig: false`` says not to; ``--registry-ca``
adds to ``driver.registryCA``. With ``-v`` each client says where its mirrors, credentials and CAs came
from. Parsing the flags imports nothing heavy; the engine loads when a command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from wizard.cli.common import EXIT_FAILED, EXIT_OK, UsageError, load_nodelist
from wizard.cli.session import load_plan, open_cluster

if TYPE_CHECKING:
    from wizard.cluster.facade import Cluster, ImageStatus
    from wizard.engine.plan import Plan
    from wizard.engine.render import Rendered


def mirror_flag(text: str) -> tuple[str, str]:
    """``--registry-mirror SOURCE=MIRROR`` checked while the flags are parsed: bad input ends before any connection."""
    from wizard.engine.plan import parse_registry_mirror  # only when the flag is given

    try:
        return parse_registry_mirror(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ca_flag(text: str) -> str:
    """``--registry-ca FILE`` checked while the flags are parsed (a path; the file is read when a registry is asked)."""
    from wizard.engine.plan import check_ca_path

    try:
        return check_ca_path(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def registry_flags(parser: argparse.ArgumentParser) -> None:
    """``--registry-auth-file``, ``--insecure-registry``, ``--registry-mirror``, ``--registry-ca`` and
    ``--no-host-registry-config``."""
    parser.add_argument("--registry-auth-file", metavar="FILE", help="docker/containers auth.json for the registry")
    parser.add_argument(
        "--insecure-registry",
        action="append",
        default=[],
        metavar="HOST",
        help="registry reached without TLS verification (repeatable)",
    )
    parser.add_argument(
        "--registry-mirror",
        action="append",
        default=[],
        type=mirror_flag,
        metavar="SOURCE=MIRROR",
        help="the cluster pulls SOURCE's images through MIRROR, e.g. nvcr.io=https://mirror.example.com; "
        "image checks ask the mirror (repeatable; adds to the answers file's driver.registryMirrors and wins "
        "over registries.conf / hosts.toml)",
    )
    parser.add_argument(
        "--registry-ca",
        action="append",
        default=[],
        type=ca_flag,
        metavar="FILE",
        help="PEM file of CAs to trust for the registries (repeatable; adds to driver.registryCA)",
    )
    parser.add_argument(
        "--no-host-registry-config",
        action="store_true",
        help="do not read this machine's registries.conf, containerd hosts.toml, certs.d folders or credential helpers",
    )


def registry_mirrors(args: argparse.Namespace, plan: Plan) -> dict[str, str]:
    """The answers file's ``driver.registryMirrors`` with ``--registry-mirror`` on top (the flag wins)."""
    return {**plan.driver.registryMirrors, **dict(getattr(args, "registry_mirror", None) or [])}


def registry_client(args: argparse.Namespace, cluster: Cluster, plan: Plan, timeout: float = 10.0) -> Any:
    """A ``RegistryClient`` for ``plan``'s images with the user's auth file, insecure registries and
    registry mirrors, routed as ``cluster`` pulls."""
    from wizard.engine.registry_routes import registry_hosts
    from wizard.registry.access import check_ca_file

    mirrors = registry_mirrors(args, plan)
    flagged = dict(getattr(args, "registry_mirror", None) or [])
    answers = f"{args.answers} (driver.registryMirrors)" if getattr(args, "answers", None) else "driver.registryMirrors"
    origins = {host: "--registry-mirror" if host in flagged else answers for host in mirrors}
    ca_files = [*([plan.driver.registryCA] if plan.driver.registryCA else []), *getattr(args, "registry_ca", [])]
    host_config = plan.driver.hostRegistryConfig and not getattr(args, "no_host_registry_config", False)
    hosts = registry_hosts(plan)
    try:
        for path in ca_files:  # before any registry request: a flag or a field naming no usable CA ends the command
            check_ca_file(path)
    except ValueError as exc:  # named, its content never shown
        raise UsageError(str(exc)) from None
    try:
        client = cluster.open_registry(
            hosts,
            mirrors=mirrors,
            auth_file=args.registry_auth_file,
            insecure_registries=args.insecure_registry,
            timeout=timeout,
            ca_files=ca_files,
            host_config=host_config,
            mirror_origins=origins,
        )
    except ValueError as exc:  # the auth file cannot be read or is not JSON: named, its content never shown
        raise UsageError(f"--registry-auth-file: {exc}") from None
    if getattr(args, "verbose", False):
        for note in client.access_notes(hosts):
            sys.stderr.write(f"registry: {note.line()}\n")
    return client


def image_lines(statuses: list[ImageStatus]) -> list[str]:
    """What ``apply`` says about the driver images before it changes anything: problems, then a count."""
    lines: list[str] = []
    for status in statuses:
        nodes = ", ".join(status.nodes[:3]) + (f" and {len(status.nodes) - 3} more" if len(status.nodes) > 3 else "")
        if status.ok:
            continue
        if status.target.error:
            lines.append(f"! image {status.image}: cannot check ({status.target.error})")
        elif status.mirrorable and status.source is not None:
            lines.append(
                f"! image {status.image} is not in the registry yet; its source {status.source.reference} is: "
                "run `gpu-wizard mirror --run` before the rollout needs it"
            )
        elif status.components:
            lines.append(
                f"✗ image {status.image} not found in the registry: the {', '.join(status.components)} pods "
                f"would end in ImagePullBackOff; copy it there: {operand_copy_command(status)}"
            )
        else:
            lines.append(
                f"✗ image {status.image} not found in the registry: the driver pods on {nodes} "
                "would end in ImagePullBackOff"
            )
    present = sum(1 for s in statuses if s.ok)
    operands = [s for s in statuses if s.components]
    if statuses and operands:
        driver = len(statuses) - len(operands)
        lines.append(
            f"images: {present} of {len(statuses)} images present where the cluster pulls from "
            f"({driver} driver, {len(operands)} operator and operand images)"
        )
    elif statuses:
        lines.append(f"images: {present} of {len(statuses)} driver images present where the cluster pulls from")
    return lines


def operand_copy_command(status: ImageStatus) -> str:
    """The command copying a missing operand image into the registry the cluster pulls from (from the chart's
    public reference), as the mirror plan runs it."""
    from wizard.engine.textsafe import shell_command

    if status.source is None:
        return "push it into the registry the cluster pulls from"
    return shell_command(
        (
            "skopeo",
            "copy",
            "--all",
            "--preserve-digests",
            f"docker://{status.source.reference}",
            f"docker://{status.image}",
        )
    )


async def check_images(args: argparse.Namespace, cluster: Cluster, rendered: Rendered) -> list[ImageStatus]:
    """Before ``apply`` changes anything: does each driver image exist where the cluster pulls from?

    Prints what it found; returns the images that are not known to be there (missing, or not
    checkable: an image check that could not run is no proof the image exists).
    """
    async with registry_client(args, cluster, rendered.plan) as registry:
        statuses = await cluster.check_images(rendered, registry)
    for line in image_lines(statuses):
        sys.stderr.write(line + "\n")
    return [s for s in statuses if not s.ok]


def missing_images_refusal(problems: list[ImageStatus]) -> tuple[str, str]:
    """Why ``apply`` stops for these images, and what to do: (message, hint)."""
    names = ", ".join(p.image for p in problems[:3]) + (f" and {len(problems) - 3} more" if len(problems) > 3 else "")
    unchecked = [p for p in problems if p.target.error]
    kind = "" if any(p.components for p in problems) else "driver "
    if unchecked and len(unchecked) == len(problems):
        what = f"could not check {len(problems)} {kind}image(s) the plan needs ({unchecked[0].target.error}): {names}"
    else:
        what = f"{len(problems)} {kind}image(s) the plan needs are not where the cluster pulls from: {names}"
    return f"{what}; nothing applied", _missing_images_hint(problems)


def _missing_images_hint(problems: list[ImageStatus]) -> str:
    """A fix that can work for each missing image: the mirror only for what a source holds (issue 25)."""
    from wizard.engine.defaults import SLE_MICRO_TAG_PREFIXES

    hints = []
    if any(p.mirrorable or p.target.error or p.components for p in problems):
        hints.append("push or mirror them first (gpu-wizard mirror --run)")
    nowhere = [p for p in problems if not p.target.error and not p.mirrorable and not p.components]
    precompiled = [p for p in nowhere if p.catalog]  # precompiled tuples carry the catalog's word
    if precompiled:
        kernel = precompiled[0].kernel
        hint = f"no source holds a precompiled image for kernel {kernel}: gpu-wizard check-kernel {kernel}"
        if not all(p.tag_os.startswith(SLE_MICRO_TAG_PREFIXES) for p in precompiled):  # a mutable OS can build it
            hint += "; or set mode: upstream, which builds the driver for any kernel"
        hints.append(hint)
    elif nowhere and not hints:
        hints.append("choose a version the registry holds for these OSes, or push the images there")
    return "; ".join(hints) + ", or pass --allow-missing-images to apply anyway"


def demo_refusal(cluster: Cluster, rendered: Rendered) -> str:
    """Why ``mirror --run`` must not copy on this cluster ("" when it may)."""
    from wizard.engine.naming import split_reference

    hosts: set[str] = set()
    for item in rendered.mirror:
        for reference in (item.source, item.target):
            try:
                hosts.add(split_reference(reference)[0])
            except ValueError:
                continue
    routes = (cluster.registry_options(sorted(hosts)).get("mirrors") or {}) if cluster.info.demo else {}
    # A host the demo sends to itself is a real registry (a scenario's loopback one): copying there is real.
    routed = sorted(host for host, location in routes.items() if location.split("/", 1)[0] != host)
    if not routed:
        return ""
    return (
        f"the demo cluster answers for {', '.join(routed)} from its simulated catalog: there is nothing to copy "
        "(the image checks of apply and verify read that catalog)"
    )


async def cmd_mirror(args: argparse.Namespace) -> int:
    """``gpu-wizard mirror``."""
    from wizard.engine.answers import plan_for_nodes
    from wizard.engine.mirror import copies
    from wizard.engine.render import mirror_script, render
    from wizard.registry.mirror_run import MirrorError, MirrorProgress, run_mirror

    plan = load_plan(args.answers)
    refusal = ""
    if args.nodes:
        facts = load_nodelist(args.nodes)
        rendered = render(plan_for_nodes(plan, facts, args.answers), facts)
    else:
        async with open_cluster(args) as cluster:
            facts = await cluster.discover()
            rendered = render(plan_for_nodes(plan, facts, args.answers), facts)
            refusal = demo_refusal(cluster, rendered)
    sys.stdout.write(mirror_script(rendered.mirror))
    for advice in rendered.advice:  # a GPU node left out of the script must not go unnoticed
        if advice.code in ("node-unplaced", "tuple-unpublished"):
            sys.stderr.write(f"warning: {advice.message}\n")
    if not args.run:
        return EXIT_OK
    if refusal:
        raise UsageError(f"--run: {refusal}")

    def progress(event: MirrorProgress) -> None:
        if event.event != "copying":
            sys.stderr.write(f"[{event.index + 1}/{event.total}] {event.event}: {event.message}\n")

    try:
        outcomes = await run_mirror(
            copies(rendered.mirror),  # never a copy of what no source holds
            authfile=args.registry_auth_file,
            insecure_registries=args.insecure_registry,
            on_progress=progress,
            ca_files=[*([plan.driver.registryCA] if plan.driver.registryCA else []), *args.registry_ca],
        )
    except MirrorError as exc:
        raise UsageError(str(exc)) from None
    failed = [o for o in outcomes if not o.ok]
    sys.stderr.write(f"mirrored {len(outcomes) - len(failed)} of {len(outcomes)} images\n")
    return EXIT_FAILED if failed else EXIT_OK
