"""What every command of the ``gpu-wizard`` command line shares: exit codes, the usage error, reading a NodeList.

Exit codes: 0 done, 1 checks failed, 2 invalid input or an unusable cluster, 130 interrupted.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from wizard.engine.facts import ClusterFacts

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130


TUI_VALUE_OPTIONS = frozenset({"--demo", "--answers", "--kubeconfig", "--context", "--chart"})
"""The top-level options that take a value: a word after one of them is not a subcommand."""


def command_word(words: Sequence[str]) -> str | None:
    """The subcommand ``words`` name (their first word that is neither an option nor a top-level option's value),
    else None. :mod:`wizard.launch` starts the TUI without one; :mod:`wizard.cli.main` declares only its parser."""
    previous = ""
    for word in words:
        if not word.startswith("-") and previous not in TUI_VALUE_OPTIONS:
            return word
        previous = word
    return None


@contextmanager
def loading_modules() -> Iterator[None]:
    """The cyclic garbage collector paused while a command loads its modules and reads its input, as
    :mod:`wizard.launch` does until the TUI's first frame: it would only rescan the classes, models and schemas
    being built, none of them garbage (15–20 of a render's ~250 CPU-ms on the loaded 2-core machine, issue 38)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class UsageError(Exception):
    """Bad input the user can fix; printed as one message, exit code 2."""


def check_tui_start(*, demo: str | None, web: bool, chart: str | None = None) -> None:
    """UsageError before Textual loads: a demo scenario that does not exist (the demo would fail inside
    the TUI), and a stdin or stderr that is no terminal (Textual reads keys from stdin and draws on
    stderr; without a TTY it would wait forever for keys that never come) unless ``web``, where the
    classroom server talks Textual's web driver protocol over those pipes.

    Light on purpose (no argparse): ``gpu-wizard`` without options starts the TUI through it alone.
    """
    if chart:  # the form of the chart Apply would install (its release comes later, from the plan)
        from wizard.engine.operator_install import chart_source

        try:
            chart_source("v0.0.0", chart)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if demo:
        from wizard.demo.scenarios.scenario import ScenarioError, load_scenario

        try:
            load_scenario(demo)
        except ScenarioError as exc:
            raise UsageError(f"--demo: {exc}") from None
    missing = [name for name, stream in (("stdin", sys.__stdin__), ("stderr", sys.__stderr__)) if not _is_tty(stream)]
    if missing and not web:  # in web mode the classroom server's web driver is the terminal
        raise UsageError(
            f"the interactive wizard needs a terminal, and {' and '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not one; in scripts use the subcommands "
            "(render, discover, apply, verify, rollback: see gpu-wizard --help)"
        )


def _is_tty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except ValueError:  # a closed stream
        return False


def version() -> str:
    """The installed distribution's version."""
    from importlib import metadata

    try:
        return metadata.version("gpu-wizard")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def load_nodelist(path: str) -> ClusterFacts:
    """Node facts from a ``kubectl get nodes -o json`` file (YAML accepted too), read within
    :data:`wizard.bounded_read.NODELIST`; a node listed twice is used once, with a warning naming it."""
    from wizard.bounded_read import NODELIST, InputError, load_bounded
    from wizard.engine.facts import ClusterFacts, facts_from_nodelist
    from wizard.engine.textsafe import printable

    try:
        data = load_bounded(path, NODELIST)
    except InputError as exc:
        unread = exc.message == "no such file" or exc.message.startswith("not valid")
        raise UsageError(f"{exc}{' (expected `kubectl get nodes -o json` output)' if unread else ''}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a NodeList (expected `kubectl get nodes -o json` output)")
    try:
        facts = facts_from_nodelist(data)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None
    last = {node.name: node for node in facts.nodes}  # the last entry of a name wins, as in `kubectl apply`
    if len(last) == len(facts.nodes):
        return facts
    counts: dict[str, int] = {}
    for node in facts.nodes:
        counts[node.name] = counts.get(node.name, 0) + 1
    twice = [f"{name} ({count}×)" for name, count in counts.items() if count > 1]
    listed = ", ".join(twice[:5]) + (f" and {len(twice) - 5} more" if len(twice) > 5 else "")
    which = "a node is" if len(twice) == 1 else f"{len(twice)} nodes are"
    warning = f"{path}: {which} listed more than once: {listed}; the last entry of each is used"
    sys.stderr.write(f"gpu-wizard: warning: {printable(warning)}\n")
    return ClusterFacts(list(last.values()))


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (empty when it has none)."""
    import argparse  # not at the top: the TUI starts through this module and its first frame needs no argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
