"""Turning any exception into words for a dialog: a title, what happened, what to do.

Engine errors (``ClusterError``, ``RegistryError``, ``AnswersError``) already carry a message
worded for the user and often a hint; anything else is reported as a bug with a way forward.
Matched by shape (attributes), so this module imports no engine code.
"""

from __future__ import annotations

_BUG_HINT = (
    "this is a bug in gpu-wizard. Your answers are saved after each step: run the same command again "
    "to resume, and report the message above."
)


def describe_error(error: BaseException) -> tuple[str, str, str]:
    """``(title, message, hint)`` for an exception; never a traceback."""
    from screens.state import tildify

    name = type(error).__name__
    kinds = {cls.__name__ for cls in type(error).__mro__}  # ApiError, ConnectionDropped… are ClusterErrors too
    message = tildify(str(getattr(error, "message", "") or error) or name)
    hint = tildify(str(getattr(error, "hint", "") or ""))
    if "ClusterError" in kinds:
        return "Cluster error", message, hint
    if "RegistryError" in kinds:
        return "Registry error", message, hint or "check the registry address, credentials and network."
    if "ScenarioError" in kinds:
        return "Demo scenario", message, hint or "pick a bundled scenario or fix the scenario file named above."
    if "WriteError" in kinds:  # one line already: the path, why, and that the old file is unchanged
        return "File not written", message, hint or "choose another file or folder, then save again."
    if "AnswersError" in kinds:
        return "Invalid answers", message, hint or "fix the fields named above; each says what is valid."
    if isinstance(error, (TimeoutError,)):
        return "Timed out", message or "the operation timed out", hint or "check that the cluster is reachable."
    if isinstance(error, PermissionError):
        return "Permission denied", message, hint or "choose a file or folder you can write to."
    if isinstance(error, OSError):
        return "File or network error", message, hint or "check the path or the connection and try again."
    return "Unexpected error", f"{name}: {message}", hint or _BUG_HINT
