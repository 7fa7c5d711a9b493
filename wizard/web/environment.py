"""What a classroom session's process is given: its command, an environment built from nothing, its folders.

The environment passes through only PATH and the locale: no KUBECONFIG, no registry, cloud or proxy
credentials. It seals the session (:data:`wizard.sealed.VARIABLE`): the app's launcher then refuses, in
one audit hook, every connection but to its own demo cluster, every host-name lookup, every program
start and every file outside the session's folder and the wizard's own program files. HOME and every XDG folder, TMPDIR and the working folder lie in the session's own
folder (0700); the server's root folder holds them all and is marked with the server's pid, so the
next server start removes the folders a killed server left (:func:`remove_stale_roots`).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from wizard import sealed

PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""The only variables of the server's environment a session sees: none can carry a credential."""

APP_DRIVER = "screens.webdriver:ClassroomWebDriver"
"""Textual's web driver, plus: the app quits when its connection to the server closes."""

ROOT_PREFIX = "gpu-wizard-classroom-"
"""Name prefix of a server's folder under the system's temporary folder."""

OWNER_FILE = "server.pid"
"""In a server's folder: the pid of the server that made it (a folder whose server is gone is stale)."""


def session_command(scenario: str) -> list[str]:
    """The wizard in web mode on the demo cluster ``scenario``, run by this Python."""
    return [sys.executable, "-m", "wizard", "--demo", scenario, "--web"]


def session_environment(folder: Path, *, width: int, height: int) -> dict[str, str]:
    """The whole environment of a session's process: built from nothing, every writable place in ``folder``."""
    home = folder / "home"
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        TMPDIR=str(home / "tmp"),
        PYTHONDONTWRITEBYTECODE="1",
        GPU_WIZARD_SESSION_FOLDER=str(home),  # the app saves files only in here (screens.dialogs)
        **{sealed.VARIABLE: str(home)},  # and the whole process is sealed to it: no network, no programs
        TEXTUAL_DRIVER=APP_DRIVER,
        TEXTUAL_COLOR_SYSTEM="truecolor",
        TERM_PROGRAM="gpu-wizard-serve",
        COLUMNS=str(width),
        ROWS=str(height),
    )
    return env


SESSION_FOLDERS = (
    "home",
    "home/.config",
    "home/.local",
    "home/.local/state",
    "home/.local/share",
    "home/.cache",
    "home/tmp",
)
"""Made (0700) in a session's folder: everything the app writes is under its HOME, shown to the student as ``~``."""


def make_root() -> Path:
    """This server's private folder (0700) under the system's temporary folder, marked with its pid."""
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX))
    (root / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
    return root


def remove_stale_roots(parent: Path | None = None) -> list[Path]:
    """Remove the folders of servers that are gone (killed before they could clean up); returns them."""
    parent = parent or Path(tempfile.gettempdir())
    removed: list[Path] = []
    for root in parent.glob(ROOT_PREFIX + "*"):
        try:
            pid = int((root / OWNER_FILE).read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            continue  # not ours, or still being made
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(root, ignore_errors=True)
        removed.append(root)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
