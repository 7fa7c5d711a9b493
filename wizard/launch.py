"""The ``gpu-wizard`` entry point: the interactive wizard (``screens``) or a subcommand (``wizard.cli``).

The CLI and the TUI are peers that never import each other; this is the one module above both. It
decides from the words alone, so the TUI's first frame never waits for the subcommand parsers.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence
from types import SimpleNamespace

from wizard.cli.common import command_word


def starts_the_tui(words: Sequence[str]) -> bool:
    """No subcommand and no --help/--version: the interactive wizard."""
    return command_word(words) is None and not any(word in ("-h", "--help", "--version") for word in words)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gpu-wizard`` command."""
    words = sys.argv[1:] if argv is None else list(argv)
    seal_a_classroom_session()
    if not starts_the_tui(words):
        from wizard.cli.main import main as cli_main

        code = cli_main(words)
        if argv is None and command_word(words) == "render":
            # The process exits next: frozen, the objects it has built (modules, models, the chart's data) are not
            # scanned again by the collections of the interpreter's exit (~5 % of a render's instructions, issue 38).
            # Only this process's own render: a caller passing argv (tests) goes on living, and a cluster command may
            # hold connections whose finalizers should still report a leak.
            gc.freeze()
        return code
    # Until the first frame (the TUI's InteractivePolicy re-enables it then) the cyclic collector would
    # only rescan the modules and styles being loaded: none of that is garbage.
    gc.disable()
    try:
        return _start_the_tui(words)
    finally:
        gc.enable()


def seal_a_classroom_session() -> None:
    """A ``gpu-wizard serve`` session (its environment says so) is sealed before anything else runs:
    no network but its own demo cluster, no programs, no files but its own folder (:mod:`wizard.sealed`)."""
    import os

    from wizard import sealed

    if not os.environ.get(sealed.VARIABLE):
        return
    from importlib.util import find_spec

    from wizard.bundled import assets

    own = [os.path.dirname(spec.origin) for name in ("wizard", "screens") if (spec := find_spec(name)) and spec.origin]
    sealed.seal_from_environment(*own, str(assets()))


def _start_the_tui(words: list[str]) -> int:
    """Check the TUI options (one line and exit 2 when wrong), then run the wizard until it exits."""
    from wizard.cli.common import EXIT_INVALID, UsageError

    try:
        args = _tui_options(words)
    except UsageError as exc:  # a scenario typo, no terminal: one line before Textual loads
        from wizard.engine.textsafe import printable

        sys.stderr.write(f"gpu-wizard: error: {printable(str(exc))}\n")
        return EXIT_INVALID
    from screens.app import run
    from wizard import requestlog
    from wizard.collector import InteractivePolicy

    log_file = tui_request_log(args)
    try:
        return run(args, InteractivePolicy())  # the collector policy for the TUI, declared once in the engine
    finally:
        requestlog.close()
        if log_file is not None:
            sys.stderr.write(f"gpu-wizard: the request log (-v) of this run is in {log_file}\n")


def tui_request_log(args: object) -> str | None:
    """Configure the TUI's request log; return the file ``-v`` writes to (the screen is the terminal, not stderr).

    Every run keeps its lines for the support bundle and ``GPU_WIZARD_LOG=FILE`` appends them to FILE, as for a
    command; ``-v`` without ``GPU_WIZARD_LOG`` gets a file of its own in the logs folder, named when the wizard ends.
    """
    import os
    import time

    from wizard import requestlog
    from wizard.paths import logs_dir

    log_file = None
    if getattr(args, "verbose", False) and not os.environ.get(requestlog.ENV):
        log_file = str(logs_dir() / time.strftime("requests-%Y%m%dT%H%M%S.log"))
    requestlog.configure(verbose=False, log_file=log_file, keep_dir=logs_dir())
    return log_file


def _tui_options(words: list[str]) -> object:
    """The TUI's options, checked. Without any, no parser is built: argparse and the CLI's main module
    (about 10 CPU-ms before the first frame) are not loaded, and every option keeps its default
    (``screens.app.run`` reads each with its default)."""
    if words:
        from wizard.cli.main import tui_arguments

        return tui_arguments(words)
    from wizard.cli.common import check_tui_start

    check_tui_start(demo=None, web=False)
    return SimpleNamespace()


def kubectl_complete() -> int:
    """``kubectl_complete-gpu_wizard``: kubectl runs it for ``kubectl gpu-wizard …<TAB>`` (kubectl 1.26 and later)."""
    from wizard.cli.completion import kubectl_answer
    from wizard.cli.main import build_parser

    sys.stdout.write(kubectl_answer(build_parser(), sys.argv[1:]))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
