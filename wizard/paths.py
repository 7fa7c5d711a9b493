"""Where files live: gpu-wizard's own config and state folders, and the config folder other tools share.

Worked out by ``platformdirs`` in one place: on Linux ``$XDG_CONFIG_HOME/gpu-wizard`` (default
``~/.config/gpu-wizard``) for answers and ``$XDG_STATE_HOME/gpu-wizard`` (default
``~/.local/state/gpu-wizard``) for backups, reports and the crash log; each platform's own folders
elsewhere. The container tools' auth files follow the XDG rules on every platform (podman and skopeo
read them there on macOS too), so :func:`xdg_config_home` asks for the XDG flavour explicitly.
"""

from __future__ import annotations

from pathlib import Path

APP_NAME = "gpu-wizard"


def config_dir() -> Path:
    """gpu-wizard's config folder (answers saved by the TUI)."""
    import platformdirs  # on first use (as below): a command that writes no file, like render, never loads it

    return platformdirs.user_config_path(APP_NAME)


def state_dir() -> Path:
    """gpu-wizard's state folder: backups, reports, the crash log."""
    import platformdirs

    return platformdirs.user_state_path(APP_NAME)


def backups_dir() -> Path:
    """Where ``apply`` writes the backup it can roll back to, unless told otherwise."""
    return state_dir() / "backups"


def logs_dir() -> Path:
    """Where the request log of the last run (and the one before) is kept for the support bundle."""
    return state_dir() / "logs"


def xdg_config_home() -> Path:
    """``$XDG_CONFIG_HOME`` (default ``~/.config``) on any platform: where other tools' configs are."""
    from platformdirs.unix import Unix

    return Unix().user_config_path
