"""A cluster command's session: the cluster flags, connecting (or starting the demo), Ctrl-C and errors.

Every cluster command (``discover``, ``apply``, ``verify``, ``rollback``, ``mirror``, ``upgrade``,
``check-kernel``) takes ``--kubeconfig``, ``--context`` (kubectl's rules) or ``--demo SCENARIO``, runs
as one coroutine under :func:`run_interruptibly` and turns a ClusterError into one line plus a hint.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from wizard.bundled import DEFAULT_DEMO_SCENARIO
from wizard.cli.common import EXIT_INVALID, UsageError, load_nodelist

if TYPE_CHECKING:  # the engine (Kubernetes client, pydantic) loads when a command runs, not to parse flags
    from wizard.cluster.facade import Cluster
    from wizard.engine.facts import ClusterFacts
    from wizard.engine.plan import Plan
    from wizard.engine.results import Check, ClusterInfo


def seconds(text: str) -> float:
    """An argparse type: a positive number of seconds (argparse turns the error into exit 2 naming the flag)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def cluster_options(parser: argparse.ArgumentParser, *, fleet: bool = False) -> None:
    """The cluster flags; ``fleet``: ``--context`` repeats and ``--all-contexts`` is offered (:mod:`wizard.cli.fleet`)."""
    group = parser.add_argument_group("cluster")
    group.add_argument(
        "--kubeconfig",
        dest="cluster_kubeconfig",
        metavar="FILE",
        help="kubeconfig (default: $KUBECONFIG, ~/.kube/config)",
    )
    if fleet:
        group.add_argument(
            "--context",
            dest="cluster_context",
            action="append",
            metavar="NAME",
            help="kube context (default: the current one); repeat it to run on several clusters concurrently",
        )
    else:
        group.add_argument(
            "--context", dest="cluster_context", metavar="NAME", help="kube context (default: the current one)"
        )
    group.add_argument(
        "--demo",
        dest="cluster_demo",
        nargs="?",
        const=DEFAULT_DEMO_SCENARIO,
        metavar="SCENARIO",
        help=f"use the built-in demo cluster with this scenario (default {DEFAULT_DEMO_SCENARIO})",
    )
    group.add_argument(
        "--in-cluster", dest="cluster_in_cluster", action="store_true", help="use the pod's service account"
    )
    group.add_argument(
        "--request-timeout",
        dest="cluster_timeout",
        type=seconds,
        default=10.0,
        metavar="SECONDS",
        help="limit for each API call (default 10)",
    )
    if fleet:
        from wizard.cli.fleet import fleet_flags

        fleet_flags(parser)


T = TypeVar("T")


def run_interruptibly(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` where Ctrl-C or SIGTERM always ends the command as interrupted (KeyboardInterrupt, exit 130).

    The first interrupt cancels the command once, so its clean-up (probe pods, sessions) still runs. A
    cancellation that races a finishing network call can be lost inside a library; the command then
    runs to its end, but it still reports the interruption instead of a normal exit. A second
    interrupt stops at once, except while an apply writes to the cluster (:mod:`wizard.cluster.applying.interrupts`):
    stopping there would leave it half-changed.
    """
    import asyncio  # here, not at the top: `render --nodes` and `--help` build this parser and never run a loop
    import signal

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        interrupted = False

        def on_interrupt() -> None:
            nonlocal interrupted
            if interrupted or task is None:
                from wizard.cluster.applying import interrupts

                if interrupts.active():
                    sys.stderr.write("gpu-wizard: finishing the apply first, so that no object is left half-changed\n")
                    return
                raise KeyboardInterrupt  # a second Ctrl-C: stop now
            interrupted = True
            task.cancel()

        try:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, on_interrupt)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
            return await coro
        try:
            result = await coro
        except asyncio.CancelledError:
            if interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
        if interrupted:
            raise KeyboardInterrupt
        return result

    return asyncio.run(main())


def command(func: Callable[[argparse.Namespace], Coroutine[Any, Any, int]]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from wizard.cluster.errors import ClusterError  # here, not at the top: render's flags need no cluster room

        warnings_to_stderr()
        if hasattr(args, "all_contexts"):  # a command that takes several clusters
            from wizard.cli.fleet import contexts_of, run_fleet

            contexts = contexts_of(args)
            if contexts is not None:
                return run_fleet(func, args, contexts, run_interruptibly)
        try:
            return run_interruptibly(func(args))
        except ClusterError as exc:
            sys.stderr.write(f"gpu-wizard: error: {exc.message}\n")
            if exc.hint:
                sys.stderr.write(f"  hint: {exc.hint}\n")
            from wizard.cli import reports

            if reports.wanted(args):  # a CI gate sees why: one case in error, never a missing or passing file
                where = args.cluster_context or (
                    f"demo {args.cluster_demo}" if args.cluster_demo else "current context"
                )
                reports.record(args, reports.error_suite(args.command, where, exc.message, exc.hint or ""))
            return EXIT_INVALID

    run.__doc__ = func.__doc__
    return run


def warnings_to_stderr() -> None:
    """The engine's warnings (an insecure registry, a broken auth file) as ``gpu-wizard: warning:`` lines."""
    import logging  # not at the top: declaring the cluster flags (render's too) loads no logging

    class Warnings(logging.Handler):
        to_stderr = True  # what a second call looks for (each call's class is its own)

        def emit(self, record: logging.LogRecord) -> None:
            sys.stderr.write(
                f"gpu-wizard: warning: {record.getMessage()}\n"
            )  # the stream of the moment (tests swap it)

    engine = logging.getLogger("wizard")
    if not any(getattr(h, "to_stderr", False) for h in engine.handlers):
        engine.addHandler(Warnings(logging.WARNING))  # with a handler here, logging's last resort stays silent


@contextlib.asynccontextmanager
async def open_cluster(args: argparse.Namespace) -> AsyncIterator[Cluster]:
    """Connect as the flags say; ``--demo`` starts the demo cluster in this process first."""
    async with contextlib.AsyncExitStack() as stack:
        kubeconfig, context = args.cluster_kubeconfig, args.cluster_context
        if args.cluster_demo:
            from wizard.demo.cluster import DemoCluster
            from wizard.demo.scenarios.scenario import ScenarioError

            try:
                demo = DemoCluster(args.cluster_demo)
            except ScenarioError as exc:
                raise UsageError(str(exc)) from None
            await stack.enter_async_context(demo)
            kubeconfig, context = str(demo.kubeconfig_path), None
        credential = None
        if not args.cluster_demo and not args.cluster_in_cluster:
            from wizard.cluster.access.kubeconfig import choose_context, plugin_credential

            # A broken kubeconfig (a missing plugin, file or user) and a failing exec plugin are told
            # before the cluster code loads (a second of CPU); the plugin runs once, here.
            credential = await plugin_credential(kubeconfig, choose_context(kubeconfig, context))
        from wizard.cluster.facade import Cluster

        cluster = await Cluster.connect(
            kubeconfig=kubeconfig,
            context=context,
            in_cluster=args.cluster_in_cluster,
            timeout=args.cluster_timeout,
            credential=credential,
        )
        stack.push_async_callback(cluster.close)
        banner(cluster.info)
        yield cluster


def banner(info: ClusterInfo) -> None:
    demo = " — SIMULATED demo cluster" if info.demo else ""
    sys.stderr.write(f"cluster: context {info.context}, {info.server} ({info.version or 'unknown version'}){demo}\n")
    if info.insecure:
        sys.stderr.write(
            f"gpu-wizard: warning: TLS verification is off for context {info.context} (insecure-skip-tls-verify "
            "in the kubeconfig): the API server's identity is not checked\n"
        )


def write_check(check: Check, out: TextIO | None = None) -> None:
    out = out or sys.stdout
    out.write(check.line() + "\n")
    if (not check.ok or check.status.value == "skipped") and check.hint:
        out.write(f"    hint: {check.hint}\n")
    out.flush()


def load_plan(path: str) -> Plan:
    """The answers file, checked before connecting; an image source it omits is the nodes' OS's, filled by
    :func:`plan_for_cluster` (or ``plan_for_nodes``) once the nodes are read."""
    from wizard.engine.answers import load_answers

    plan, _ = load_answers(path, nodes_later=True)
    return plan


async def plan_for_cluster(cluster: Cluster, plan: Plan, path: str) -> Plan:
    """``plan`` completed for the cluster's GPU nodes (their OS's image source); the nodes are read only when
    the answers left the source or image to them."""
    from wizard.engine.answers import plan_for_nodes

    if plan.mode.value == "preinstalled" or (plan.driver.source and plan.driver.image):
        return plan
    return plan_for_nodes(plan, await cluster.discover(), path)


async def facts_for(args: argparse.Namespace) -> ClusterFacts:
    """Node facts from ``--nodes FILE`` or, without it, from the cluster the flags name."""
    if getattr(args, "nodes", None):
        return load_nodelist(args.nodes)
    async with open_cluster(args) as cluster:
        return await cluster.discover()


def render_facts(args: argparse.Namespace) -> ClusterFacts:
    """For ``gpu-wizard render`` without ``--nodes``: the facts of the cluster (ClusterError -> UsageError)."""
    from wizard.cluster.errors import ClusterError

    try:
        return run_interruptibly(facts_for(args))
    except ClusterError as exc:
        raise UsageError(f"{exc.message}{f' (hint: {exc.hint})' if exc.hint else ''}") from None
