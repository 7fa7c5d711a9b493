"""A student typing hostile values into every field that names a registry or a file, in a sealed session.

``python -m tests.helpers.sealed_student FOLDER PORT``, run by ``tests/test_web_sealed.py`` inside a network
namespace where :mod:`tests.helpers.netwatch` answers DNS on 127.0.0.1:53 and listens on 127.0.0.1:PORT.
First a control, unsealed: one lookup and one connection that the watcher must see (else it is blind).
Then the process takes a classroom session's environment (:func:`wizard.web.environment.session_environment`)
and seals itself as a session's launcher does (:func:`wizard.launch.seal_a_classroom_session`), walks the
demo to the Driver step and types each value; what each field then shows is printed as one JSON line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
from pathlib import Path

from textual.widgets import Static

from screens.app import WizardApp
from tests.helpers.tui import demo_app, set_field, walk_to
from tests.snapshots.plugin import screen_text, wait_for
from wizard import launch
from wizard.web.environment import SESSION_FOLDERS, session_environment

CONTROL_NAME = "control-probe.invalid"
REPOSITORY_HOST = "registry.example.com"
"""A registry the demo world knows (its simulated registry answers for it): the mirrors and CA files are tried on it."""


def network_values(port: int) -> dict[str, list[str]]:
    """Per field, what a student types to make the session reach out."""
    return {
        "driver-repository": [f"127.0.0.1:{port}/mlops", "made-up-registry.invalid/mlops", f"localhost:{port}/x"],
        "registry-mirrors": [
            f"{REPOSITORY_HOST}=https://127.0.0.1:{port}/m",
            f"{REPOSITORY_HOST}=https://mirror.invalid",
        ],
    }


def file_values(home: Path) -> list[str]:
    """What a student types into "Registry CA file": paths outside the session's folder, and one inside it."""
    return ["/etc/passwd", "/nonexistent/ca.pem", "/etc", "../..", "/proc/self/environ", str(home / "mine.txt")]


def control(port: int) -> None:
    with contextlib.suppress(OSError):
        socket.getaddrinfo(CONTROL_NAME, 443)
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def become_a_session(folder: Path) -> Path:
    for name in SESSION_FOLDERS:
        (folder / name).mkdir(mode=0o700, parents=True, exist_ok=True)
    environment = session_environment(folder, width=100, height=40)
    for name in ("HOME", "TMPDIR", "GPU_WIZARD_SESSION_FOLDER", *[n for n in environment if n.startswith("XDG_")]):
        os.environ[name] = environment[name]
    for name, value in environment.items():
        if name.startswith("GPU_WIZARD_SEALED"):
            os.environ[name] = value
    tempfile.tempdir = None  # (read again from TMPDIR)
    sys.path[:] = [entry for entry in sys.path if entry not in ("", os.getcwd())]  # as a session: its ~ instead
    home = folder / "home"
    sys.path.insert(0, str(home))
    (home / "mine.txt").write_text("not a certificate\n", encoding="utf-8")
    os.chdir(home)
    return home


async def student(app: WizardApp, port: int, home: Path) -> dict[str, dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    async with app.run_test(size=(100, 40)) as pilot:
        await walk_to(pilot, "nodes", "mode", "driver")
        groups = app.screen.query_one("#groups", Static)
        for field_id, values in network_values(port).items():
            for value in values:
                await wait_for(pilot, lambda f=field_id: bool(app.screen.query(f"#{f}")), 30, field_id)  # type: ignore[misc]
                await set_field(pilot, field_id, value)
                with contextlib.suppress(AssertionError):
                    await wait_for(pilot, lambda: "no network" in str(groups.content), 30, "a refusal")
                seen.setdefault(field_id, {})[value] = str(groups.content)
            await set_field(pilot, field_id, f"{REPOSITORY_HOST}/mlops" if field_id == "driver-repository" else "")
        for value in file_values(home):
            await set_field(pilot, "registry-ca", value)
            with contextlib.suppress(AssertionError):
                await wait_for(pilot, lambda v=value: f"CA file {v}" in str(groups.content), 30, "the CA file's line")  # type: ignore[misc]
            seen.setdefault("registry-ca", {})[value] = str(groups.content)
        seen["screen"] = {"last": screen_text(app)}
    return seen


def main() -> None:
    folder, port = Path(sys.argv[1]), int(sys.argv[2])
    control(port)
    home = become_a_session(folder)
    launch.seal_a_classroom_session()
    app = demo_app(home, "sle-micro-precompiled")
    seen = asyncio.run(student(app, port, home))
    sys.stdout.write("SEEN " + json.dumps(seen) + "\n")


if __name__ == "__main__":
    main()
