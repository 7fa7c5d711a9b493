"""What every command of the ``gpu-wizard`` command line shares: exit codes, the usage error, reading a NodeList.

Exit codes: 0 done, 1 checks failed, 2 invalid input or an unusable cluster, 130 interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from wizard.engine.facts import ClusterFacts

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """Bad input the user can fix; printed as one message, exit code 2."""


def check_tui_start(*, demo: str | None, web: bool) -> None:
    """UsageError before Textual loads: a demo scenario that does not exist (the demo would fail inside
    the TUI), and a stdin or stderr that is no terminal (Textual reads keys from stdin and draws on
    stderr; without a TTY it would wait forever for keys that never come) unless ``web``, where the
    classroom server talks Textual's web driver protocol over those pipes.

    Light on purpose (no argparse): ``gpu-wizard`` without options starts the TUI through it alone.
    """
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
    """Node facts from a ``kubectl get nodes -o json`` file (YAML accepted too)."""
    import json  # here, like ruamel: the TUI starts through wizard.cli and its first frame needs neither

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from wizard.engine.facts import facts_from_nodelist

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (expected `kubectl get nodes -o json` output)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the file ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as json_error:
        try:
            data = YAML(typ="safe", pure=True).load(text)
        except YAMLError:
            raise UsageError(
                f"{path}:{json_error.lineno}: not valid JSON ({json_error.msg}); expected `kubectl get nodes -o json` output"
            ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a NodeList (expected `kubectl get nodes -o json` output)")
    try:
        return facts_from_nodelist(data)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (empty when it has none)."""
    import argparse  # not at the top: the TUI starts through this module and its first frame needs no argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
