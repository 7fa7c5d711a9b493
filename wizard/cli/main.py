"""The ``gpu-wizard`` command line: argument parsing and dispatch to the engine.

Exit codes: 0 done, 1 checks failed, 2 invalid input or unusable cluster. User errors are one
clear line each on stderr (field, file line, what is valid), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from wizard.bundled import DEFAULT_DEMO_SCENARIO
from wizard.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    UsageError,
    check_tui_start,
    command_word,
    load_nodelist,
    loading_modules,
    subparsers,
    version,
)
from wizard.engine.modes import Mode

OUTPUT_FORMATS = ("yaml", "json", "helm", "mirror", "images", "image-list", "hauler", "zarf")
OWN_COMMANDS = ("render", "answers", "demo")
"""The commands declared in this module (their implementations load when they run)."""
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "wizard.cli.serve": ("serve",),
    "wizard.cli.cluster": ("discover", "apply", "verify", "rollback", "mirror"),
    "wizard.cli.upgrade": ("upgrade", "check-kernel"),
    "wizard.cli.doctor": ("doctor",),
    "wizard.cli.drift": ("drift",),
    "wizard.cli.bundle": ("support-bundle",),
    "wizard.cli.gitops": ("bundle",),
    "wizard.cli.cleanup": ("cleanup",),
    "wizard.cli.examples": ("examples",),
    "wizard.cli.completion": ("completion",),
}
"""Each module's ``register(sub)`` declares these commands, in this order (``gpu-wizard --help`` lists them so).
Running one command loads only its own module: ``render`` none of them (issue 38: the CLI imported every
command's module, ``asyncio`` included, before parsing). ``tests/test_cli_startup.py`` holds this map to
what each module declares."""
ALL_MODULE_COMMANDS = frozenset(command for declared in COMMAND_MODULES.values() for command in declared)


class _VersionAction(argparse.Action):
    """``--version``, looking the version up only when asked (keeps start-up fast)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, help=help, default=argparse.SUPPRESS)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        parser.exit(message=f"gpu-wizard {version()}\n")


def _emit_advice(advice: Sequence[Any], stream: TextIO) -> None:
    for item in advice:
        stream.write(f"{item.level}: {item.message}\n  why: {item.reason}\n")


def cmd_render(args: argparse.Namespace) -> int:
    """``gpu-wizard render``: answers + node facts -> manifests on stdout, advice on stderr."""
    with loading_modules():  # the engine's modules load with the collector paused; a cluster's facts come after
        from wizard.engine import render as rendering
        from wizard.engine.answers import load_answers, plan_for_nodes

        plan, _ = load_answers(args.answers, nodes_later=True)  # its mistakes said before the nodes are read
    if args.nodes:
        facts = load_nodelist(args.nodes)
    else:  # no NodeList: read the nodes from the cluster (--kubeconfig/--context/--demo, added by cli_cluster)
        from wizard.cli.session import render_facts

        facts = render_facts(args)
    plan = plan_for_nodes(plan, facts, args.answers)
    result = rendering.render(plan, facts)
    out: TextIO = sys.stdout
    if args.output == "yaml":
        out.write(rendering.to_yaml(result.documents()))
    elif args.output == "json":
        import json  # not at the top: the TUI starts through this module and its first frame needs no json

        doc = {"apiVersion": "v1", "kind": "List", "items": result.documents()}
        out.write(json.dumps(doc, indent=2) + "\n")
    elif args.output == "helm":
        out.write(rendering.helm_yaml(result))
    elif args.output == "mirror":
        out.write(rendering.mirror_script(result.mirror))
    elif args.output == "images":
        out.write(rendering.images_table(result.node_images))
    elif args.output in ("image-list", "hauler", "zarf"):
        from wizard.engine import image_lists

        writer = {"image-list": image_lists.plain_list, "hauler": image_lists.hauler_manifest}
        out.write(writer.get(args.output, image_lists.zarf_package)(result))
    _emit_advice(result.advice, sys.stderr)
    if any(item.code == "tuple-unpublished" for item in result.advice):
        return EXIT_FAILED  # rendered, but a GPU node would get no driver: a check failed
    return EXIT_OK


def cmd_answers_init(args: argparse.Namespace) -> int:
    """``gpu-wizard answers init``: a commented example answers file."""
    from wizard.atomic_write import write_private
    from wizard.cli.answers_init import init_from_cluster, wants_cluster
    from wizard.engine.answers import example_answers

    target = None if args.output in (None, "-") else Path(args.output)
    if target is not None and target.exists() and not args.force and not target.is_dir():  # before any connection
        raise UsageError(f"{target}: already exists; pass --force to overwrite")
    if args.example:
        if wants_cluster(args):
            raise UsageError("--example: a bundled example is not read from a cluster; drop the cluster flags")
        from wizard.cli.examples import example_text

        text, what = example_text(args.example), f"the {args.example} example"
    elif wants_cluster(args):  # the defaults the wizard offers on that cluster (--mode: that mode's)
        text, what = init_from_cluster(args)
    else:
        mode = args.mode or Mode.PRECOMPILED.value
        text, what = example_answers(Mode(mode)), f"{mode} mode"
    if target is None:
        sys.stdout.write(text)
        return EXIT_OK
    write_private(target, text)  # a folder: write_private says so
    from wizard.engine.textsafe import shell_command

    if wants_cluster(args) and not args.example:  # the same cluster flags: check it against that cluster
        flags = [
            f"--{name}={value}"
            for name in ("kubeconfig", "context", "demo")
            if (value := getattr(args, f"cluster_{name}"))
        ]
        then = shell_command(["gpu-wizard", "apply", "--answers", str(target), "--dry-run", *flags])
        sys.stderr.write(f"wrote {target} ({what}); review it, then: {then}\n")
        return EXIT_OK
    then = shell_command(["gpu-wizard", "render", "--answers", str(target)])
    sys.stderr.write(
        f"wrote {target} ({what}); edit it, then: {then}\n"
        "  (renders for the nodes of the current kube context; add --nodes NODELIST.json for a saved "
        "`kubectl get nodes -o json`, or --demo for the built-in demo cluster)\n"
    )
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """``gpu-wizard demo serve``: the built-in demo cluster in the foreground."""
    from wizard.demo import serve

    return serve.main(args.demo_args)


def build_parser(*, commands: bool = True, only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand (``commands=False``: the TUI's options only).

    ``only``: the command about to run; of the modules in :data:`COMMAND_MODULES` only the one declaring it is
    loaded (none for this module's own commands). An unknown word gets every command (argparse lists them).
    """
    parser = argparse.ArgumentParser(
        prog="gpu-wizard",
        description="Install the NVIDIA GPU Operator's driver, from node facts to a verified install.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help=(
            "write one line per API and registry request to stderr (the interactive wizard: to a file in the "
            "logs folder, named when it ends; GPU_WIZARD_LOG=FILE: to FILE)"
        ),
    )
    parser.add_argument(
        "--demo",
        nargs="?",
        const=DEFAULT_DEMO_SCENARIO,
        metavar="SCENARIO",
        help=f"run the wizard (or a cluster command) on the built-in demo cluster (default {DEFAULT_DEMO_SCENARIO})",
    )
    parser.add_argument(
        "--answers", dest="tui_answers", metavar="FILE", help="prefill (and replay) from an answers file"
    )
    parser.add_argument("--kubeconfig", dest="tui_kubeconfig", metavar="FILE", help="kubeconfig (default: $KUBECONFIG)")
    parser.add_argument("--context", dest="tui_context", metavar="NAME", help="kube context (default: current)")
    parser.add_argument(
        "--chart",
        dest="tui_chart",
        metavar="REF",
        help="where no GPU Operator runs: the chart the wizard installs (a local chart folder, a .tgz or an oci:// "
        "reference; air-gapped); default: the release's chart from NVIDIA's Helm repository",
    )
    # set by `gpu-wizard serve` for its session processes (browser keys in the footer and help)
    parser.add_argument("--web", action="store_true", help=argparse.SUPPRESS)
    if not commands:
        return parser
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    render = sub.add_parser("render", help="render manifests from an answers file and a NodeList")
    render.add_argument("--answers", required=True, metavar="FILE", help="answers file (see `answers init`)")
    render.add_argument(
        "--nodes",
        metavar="NODELIST.json",
        help="`kubectl get nodes -o json` output (default: the nodes of the cluster)",
    )
    render.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS,
        default="yaml",
        help=(
            "what to print (default yaml): images is NODE<TAB>DRIVER IMAGE; image-list, hauler and zarf every image "
            "of the plan to fetch for an air-gapped cluster (a plain list, a hauler Images manifest, a zarf.yaml)"
        ),
    )
    render.set_defaults(handler=cmd_render)
    from wizard.cli.session import cluster_options

    cluster_options(render)  # no --nodes: the nodes of this cluster

    answers = sub.add_parser("answers", help="work with answers files")
    answers_sub = answers.add_subparsers(dest="answers_command", metavar="ACTION", required=True)
    init = answers_sub.add_parser(
        "init",
        help="write a commented answers file: the wizard's defaults for a cluster (--kubeconfig, --context, --demo), "
        "else an example",
    )
    init.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        help="the example's mode (default precompiled); on a cluster, this mode instead of the recommended one",
    )
    cluster_options(init)
    from wizard.cli.examples import example_names

    init.add_argument(
        "--example",
        choices=example_names(),
        metavar="NAME",
        help="a bundled example instead (see `gpu-wizard examples`)",
    )
    init.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(handler=cmd_answers_init)

    demo = sub.add_parser("demo", help="the built-in demo cluster (simulated GPU Operator)")
    demo_sub = demo.add_subparsers(dest="demo_command", metavar="ACTION", required=True)
    serve = demo_sub.add_parser(
        "serve", help="run it in the foreground and print the KUBECONFIG line", add_help=False, prefix_chars="\0"
    )
    serve.add_argument("demo_args", nargs=argparse.REMAINDER, help="[--scenario NAME|FILE] [--port N] [--step-delay S]")
    serve.set_defaults(handler=cmd_demo)

    import importlib

    for name, declared in COMMAND_MODULES.items():
        if only in OWN_COMMANDS or (only in ALL_MODULE_COMMANDS and only not in declared):
            continue  # not the command that runs: its module stays unloaded
        module = importlib.import_module(name)
        if name == "wizard.cli.completion":
            module.register(sub, build_parser)  # completion: bash, zsh and fish scripts from the whole parser
        else:
            module.register(sub)
    _verbose_everywhere(sub)
    return parser


def _verbose_everywhere(sub: Any) -> None:
    """``--verbose`` after the command too (``gpu-wizard apply --verbose``); ``-v`` stays before it, since
    ``verify -v`` already means --show-output."""
    for command in sub.choices.values():
        if any("--verbose" in a.option_strings for a in command._actions) or command.prefix_chars != "-":
            continue
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS, help="as gpu-wizard -v")
        if nested := subparsers(command):
            for child in nested.values():
                if child.prefix_chars == "-" and not any("--verbose" in a.option_strings for a in child._actions):
                    child.add_argument(
                        "--verbose", action="store_true", default=argparse.SUPPRESS, help="as gpu-wizard -v"
                    )


def tui_arguments(words: Sequence[str]) -> argparse.Namespace:
    """The interactive wizard's options (``--demo``, ``--answers``, ``--kubeconfig``, ``--context``), checked
    by :func:`wizard.cli.common.check_tui_start` (UsageError before Textual loads)."""
    args = build_parser(commands=False).parse_args(words)
    check_tui_start(demo=args.demo, web=args.web, chart=getattr(args, "tui_chart", None))
    return args


def _printable(text: str) -> str:
    """A message quoting user input, control characters escaped (loaded only when something failed)."""
    from wizard.engine.textsafe import printable

    return printable(text)


def main(argv: Sequence[str] | None = None) -> int:
    """The subcommands of ``gpu-wizard`` (:mod:`wizard.launch` sends everything else to the TUI)."""
    from wizard.engine.textsafe import PrintableStream

    words = sys.argv[1:] if argv is None else list(argv)
    streams = sys.stdout, sys.stderr
    # Every line a command prints (argparse's errors echoing argv included) passes the control-character guard.
    sys.stdout, sys.stderr = PrintableStream(sys.stdout), PrintableStream(sys.stderr)  # type: ignore[assignment]
    try:
        parser = build_parser(only=command_word(words))
        args = parser.parse_args(words)
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
        if handler is None:  # the interactive wizard is started by wizard.launch, never from here
            parser.print_usage(sys.stderr)
            sys.stderr.write(
                "gpu-wizard: error: name a command, or run gpu-wizard without one for the interactive wizard\n"
            )
            return EXIT_INVALID
        from wizard import requestlog
        from wizard.paths import logs_dir

        requestlog.configure(verbose=args.verbose, keep_dir=logs_dir)  # found on the first request, if any
        try:
            return _run_command(partial(_with_top_level_demo, handler), args)
        finally:
            requestlog.close()
    finally:
        sys.stdout, sys.stderr = streams


def _with_top_level_demo(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """``gpu-wizard --demo S COMMAND``: the top-level ``--demo`` is the command's own (never silently dropped)."""
    demo = args.demo
    if demo is not None:
        own = next((name for name in ("cluster_demo", "serve_demo") if hasattr(args, name)), None)
        if own is None:
            raise UsageError(f"--demo: `gpu-wizard {args.command}` uses no cluster; leave --demo out")
        if getattr(args, own) not in (None, demo):
            raise UsageError(f"--demo given twice ({demo} before the command, {getattr(args, own)} after it)")
        setattr(args, own, demo)
    return handler(args)


def _run_command(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one subcommand, turning the user's errors into one line each and an exit code."""
    try:
        return handler(args)
    except UsageError as exc:
        sys.stderr.write(f"gpu-wizard: error: {_printable(str(exc))}\n")
        return EXIT_INVALID
    except KeyboardInterrupt:
        sys.stderr.write("gpu-wizard: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        from wizard.atomic_write import WriteError
        from wizard.engine.answers import AnswersError  # loaded only when something failed: start-up stays light
        from wizard.engine.node_grammar import NodeFactsError
        from wizard.engine.textsafe import printable

        if isinstance(exc, (NodeFactsError, WriteError)):  # a node breaking a grammar; a file that cannot be written
            sys.stderr.write(f"gpu-wizard: error: {printable(str(exc))}\n")
            return EXIT_INVALID
        if not isinstance(exc, AnswersError):
            raise
        for error in exc.errors:
            sys.stderr.write(f"gpu-wizard: error: {error.render(exc.source)}\n")
        return EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
