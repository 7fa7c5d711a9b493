"""Many clusters in one run: ``--context A --context B …`` or ``--all-contexts`` (issue 36, item 4).

``discover``, ``verify``, ``doctor``, ``drift`` and ``check-kernel`` take several kube contexts. Each cluster runs
the command's own coroutine, concurrently (``--max-clusters``, default :data:`CONCURRENCY`), with what it prints
kept apart: ``sys.stdout`` and ``sys.stderr`` are routed by a context variable to the cluster's own buffer (an
asyncio task copies the variables of the one that made it, so every await and thread of that cluster writes to its
buffer and nothing of the command changes). Each cluster is then one section with its own verdict, in the order
given, printed as soon as it and those before it are done; then one summary table (cluster, GPU nodes, driver,
verdict) and one exit code, the worst of all (0 ok, 1 findings, 2 a cluster unusable or bad input). A cluster
that cannot be reached is a line in its section and the table, never a stop. With ``-o json`` stdout is one
document holding every cluster's own report. ``--report-junit``/``--report-ctrf`` get one suite per cluster.

A command tells the table what it saw through :func:`note` (a no-op for a single cluster).
"""

from __future__ import annotations

import argparse
import contextvars
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from wizard.cli.common import EXIT_FAILED, EXIT_INVALID, EXIT_OK, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

CONCURRENCY = 16
"""Clusters at once: enough for a 10-cluster fleet in one round; each holds a connection pool and, for
``verify``/``doctor``, a probe DaemonSet watch."""


@dataclass
class ClusterRun:
    """One cluster's run: what it printed (in order, both streams), its exit code and what the table shows."""

    context: str
    writes: list[tuple[str, str]] = field(default_factory=list)
    code: int = EXIT_OK
    error: str = ""
    gpu_nodes: int | None = None
    driver: str = ""
    verdict: str = ""
    seconds: float = 0.0

    def text(self, stream: str | None = None) -> str:
        return "".join(text for which, text in self.writes if stream is None or which == stream)


_CURRENT: contextvars.ContextVar[ClusterRun | None] = contextvars.ContextVar("gpu_wizard_fleet", default=None)


def note(*, gpu_nodes: int | None = None, driver: str | None = None, verdict: str | None = None) -> None:
    """What the summary table shows for the cluster this code runs for (nothing outside a fleet run)."""
    run = _CURRENT.get()
    if run is None:
        return
    if gpu_nodes is not None:
        run.gpu_nodes = gpu_nodes
    if driver is not None:
        run.driver = driver
    if verdict is not None:
        run.verdict = verdict


class _Routed:
    """A stand-in for ``sys.stdout``/``sys.stderr``: a cluster's writes go to its run, the rest to ``real``."""

    def __init__(self, real: TextIO, name: str) -> None:
        self._real, self._name = real, name

    def write(self, text: str) -> int:
        run = _CURRENT.get()
        if run is None:
            return self._real.write(text)
        run.writes.append((self._name, text))
        return len(text)

    def flush(self) -> None:
        if _CURRENT.get() is None:
            self._real.flush()

    def isatty(self) -> bool:
        return _CURRENT.get() is None and self._real.isatty()  # a cluster's buffer is no terminal

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def fleet_flags(parser: argparse.ArgumentParser) -> None:
    """``--all-contexts`` and ``--max-clusters`` (``--context`` repeats: :func:`wizard.cli.session.cluster_options`)."""
    group = parser.add_argument_group("many clusters")
    group.add_argument(
        "--all-contexts",
        action="store_true",
        help="run on every context of the kubeconfig, concurrently; one section each, then a summary table",
    )
    group.add_argument(
        "--max-clusters",
        type=int,
        default=CONCURRENCY,
        metavar="N",
        help=f"clusters at once with several contexts (default {CONCURRENCY})",
    )


def contexts_of(args: argparse.Namespace) -> list[str] | None:
    """The contexts of a fleet run, or None for one cluster (``args.cluster_context`` then made a single name)."""
    named: list[str] = list(args.cluster_context or [])
    if not args.all_contexts and len(named) <= 1:
        args.cluster_context = named[0] if named else None
        return None
    if args.cluster_demo or args.cluster_in_cluster:
        flag = "--demo" if args.cluster_demo else "--in-cluster"
        raise UsageError(f"{flag}: one cluster only; leave it out with several --context or --all-contexts")
    if args.max_clusters < 1:
        raise UsageError(f"--max-clusters: {args.max_clusters} is not a positive number of clusters")
    if args.all_contexts:
        if named:
            raise UsageError("--all-contexts: every context already; leave --context out")
        from wizard.cluster.facade import kube_contexts

        named, _ = kube_contexts(args.cluster_kubeconfig)
        if not named:
            raise UsageError("--all-contexts: the kubeconfig names no context")
    seen: list[str] = []
    for name in named:
        if name not in seen:
            seen.append(name)
    return seen


def run_fleet(
    func: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
    args: argparse.Namespace,
    contexts: list[str],
    run_loop: Callable[[Coroutine[Any, Any, None]], None],
) -> int:
    """Run ``func`` on every context (as :func:`wizard.cli.session.command` runs it on one, ``run_loop`` being its
    :func:`~wizard.cli.session.run_interruptibly`) and print the sections and the summary; the exit code is the
    worst of all."""
    from wizard.cli import reports

    real_out, real_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Routed(real_out, "out"), _Routed(real_err, "err")  # type: ignore[assignment]
    token = reports.collecting() if reports.wanted(args) else None
    runs = [ClusterRun(name) for name in contexts]
    try:
        run_loop(_all(func, args, runs, real_out, real_err))
    finally:
        sys.stdout, sys.stderr = real_out, real_err
        suites = reports.collected(token) if token is not None else []
    if token is not None:
        kept = {suite.cluster for suite in suites}
        for run in runs:  # a cluster unusable before its command judged anything: one case in error
            if run.error and run.context not in kept:
                suites.append(reports.error_suite(args.command, run.context, run.error))
        reports.write(args, suites)
    return _summary(args, runs, real_out)


async def _all(
    func: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
    args: argparse.Namespace,
    runs: list[ClusterRun],
    out: TextIO,
    err: TextIO,
) -> None:
    import asyncio

    gate = asyncio.Semaphore(args.max_clusters)

    async def one(run: ClusterRun) -> None:
        async with gate:
            _CURRENT.set(run)  # this task's own copy of the variables: every write of this cluster lands in its run
            started = time.monotonic()
            try:
                run.code = await func(_for_context(args, run.context))
            except Exception as exc:  # a cluster that cannot be used is a line, not a stop
                line = _failure_line(exc)
                if line is None:
                    raise
                run.code, run.error = EXIT_INVALID, line
                sys.stderr.write(f"gpu-wizard: error: {line}\n")
            finally:
                run.seconds = time.monotonic() - started

    tasks = [asyncio.ensure_future(one(run)) for run in runs]
    try:
        for run, task in zip(runs, tasks, strict=True):
            await task
            _section(args, run, out, err)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _for_context(args: argparse.Namespace, context: str) -> argparse.Namespace:
    sub = argparse.Namespace(**vars(args))
    sub.cluster_context = context
    return sub


def _failure_line(exc: Exception) -> str | None:
    """The one line for an exception that ends one cluster's run (None: a bug, raised as it is)."""
    from wizard.atomic_write import WriteError
    from wizard.cluster.errors import ClusterError
    from wizard.engine.answers import AnswersError
    from wizard.engine.textsafe import printable

    if isinstance(exc, ClusterError):
        return printable(exc.message + (f" (hint: {exc.hint})" if exc.hint else ""))
    if isinstance(exc, AnswersError):
        return "; ".join(error.render(exc.source) for error in exc.errors)
    if isinstance(exc, (UsageError, WriteError)):
        return printable(str(exc))
    return None


_VERDICTS = {EXIT_OK: "ok", EXIT_FAILED: "failed", EXIT_INVALID: "unusable"}


def _verdict(run: ClusterRun) -> str:
    if run.error:
        return f"unusable: {run.error}"
    return run.verdict or _VERDICTS.get(run.code, f"exit {run.code}")


def _section(args: argparse.Namespace, run: ClusterRun, out: TextIO, err: TextIO) -> None:
    """One cluster's section: text: a heading, everything it printed, its verdict; json: its stderr, prefixed."""
    if getattr(args, "output", "text") == "json":
        for line in run.text("err").splitlines():
            err.write(f"[{run.context}] {line}\n")
        err.flush()
        return
    out.write(f"=== cluster {run.context} ===\n{run.text()}")
    if run.writes and not run.writes[-1][1].endswith("\n"):
        out.write("\n")
    verdict = "unusable" if run.error else _verdict(run)  # the error is the line just above
    out.write(f"=== {run.context}: {verdict} (exit {run.code}, {run.seconds:.1f} s) ===\n\n")
    out.flush()


def _worst(codes: list[int]) -> int:
    for code in (130, EXIT_INVALID, EXIT_FAILED):
        if code in codes:
            return code
    return max(codes, default=EXIT_OK)


def _summary(args: argparse.Namespace, runs: list[ClusterRun], out: TextIO) -> int:
    code = _worst([run.code for run in runs])
    if getattr(args, "output", "text") == "json":
        import json

        doc = {"clusters": [_run_json(run) for run in runs], "exitCode": code}
        out.write(json.dumps(doc, indent=2) + "\n")
        return code
    rows = [("CLUSTER", "GPU NODES", "DRIVER", "VERDICT")]
    rows += [
        (run.context, "-" if run.gpu_nodes is None else str(run.gpu_nodes), run.driver or "-", _verdict(run))
        for run in runs
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)))
        out.write(f"  {row[3]}\n")
    counts = {word: sum(1 for run in runs if _VERDICTS.get(run.code) == word) for word in _VERDICTS.values()}
    said = ", ".join(f"{n} {word}" for word, n in counts.items() if n)
    out.write(f"{len(runs)} clusters: {said}; exit {code}\n")
    out.flush()
    return code


def _run_json(run: ClusterRun) -> dict[str, Any]:
    import json

    report: Any = None
    text = run.text("out").strip()
    if text:
        try:
            report = json.loads(text)
        except ValueError:
            report = text
    return {
        "context": run.context,
        "exitCode": run.code,
        "verdict": _verdict(run),
        "gpuNodes": run.gpu_nodes,
        "driver": run.driver or None,
        "error": run.error or None,
        "seconds": round(run.seconds, 3),
        "report": report,
    }


def active() -> bool:
    """True while this code runs for one cluster of several (what only the summary table needs is read then)."""
    return _CURRENT.get() is not None


def driver_words(mode: str, version: str) -> str:
    """The DRIVER column: the plan's version, or what stands for it."""
    if mode == "preinstalled":
        return "pre-installed (host)"
    return f"{version} ({mode})" if version else mode
