"""The command line's exit codes and its one kind of user error (shared by every subcommand module).

Exit codes: 0 done, 1 checks failed, 2 invalid input or unusable cluster (130 interrupted, set by
:func:`wizard.cli.main.main`). A :class:`UsageError` is printed as one line, ``gpu-wizard: error: …``.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class UsageError(Exception):
    """Bad input the user can fix; printed as one message, exit code 2."""
