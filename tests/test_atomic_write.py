"""Every write fails as one line, keeps the old file and leaves no temporary file: EISDIR, EACCES, EROFS, ENOSPC.

The failures are real, not simulated: a folder as the target; a 0555 folder written by a root
process whose capability bounding set lacks CAP_DAC_OVERRIDE (tests run as root, and root ignores
permission bits otherwise); a tmpfs remounted read-only; a 64 KiB tmpfs filled up; an immutable
folder (``chattr +i``, EPERM). Where mounting is not permitted the test is skipped with the reason;
under ``CI=true`` a missing ``mount``/``setpriv``/``chattr`` tool fails instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from wizard.atomic_write import WriteError, write_private

OLD = "old: content\n"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed; CI must run the write-failure tests")
        pytest.skip(f"SKIPPED: {name} is not installed, so this write failure cannot be produced for real")
    return found


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    """A small tmpfs at ``where`` (root only); skipped with the reason where mounting is not permitted."""
    where.mkdir()
    mounted = subprocess.run(
        [_tool("mount"), "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"SKIPPED: cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def cli(*argv: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*prefix, sys.executable, "-m", "wizard", *argv], capture_output=True, text=True, timeout=30)


def assert_refused(result: subprocess.CompletedProcess[str], target: Path, reason: str) -> None:
    """Exit 2, one line naming the file and the reason, the old content kept, no temporary file left."""
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert str(target) in result.stderr and reason in result.stderr, result.stderr
    assert result.stdout == ""
    if target.is_file():
        assert target.read_text() == OLD
    assert not [p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.")]


def test_target_is_a_folder(tmp_path: Path) -> None:
    result = cli("answers", "init", "-o", str(tmp_path), "--force")
    assert_refused(result, tmp_path, "it is a folder")
    assert list(tmp_path.iterdir()) == []


def test_read_only_folder_without_dac_override(tmp_path: Path) -> None:
    setpriv = _tool("setpriv")
    folder = tmp_path / "locked"
    folder.mkdir()
    target = folder / "a.yaml"
    target.write_text(OLD)
    folder.chmod(0o555)
    try:
        result = cli(
            "answers", "init", "-o", str(target), "--force", prefix=(setpriv, "--bounding-set", "-dac_override")
        )
    finally:
        folder.chmod(0o755)
    if result.returncode == 0 and os.geteuid() != 0:
        pytest.skip("SKIPPED: not root, and this user may write the 0555 folder")  # pragma: no cover
    assert_refused(result, target, "permission denied")


def test_read_only_file_system(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt") as mnt:
        target = mnt / "a.yaml"
        target.write_text(OLD)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        assert_refused(cli("answers", "init", "-o", str(target), "--force"), target, "the file system is read-only")


def test_full_disk(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt") as mnt:
        target = mnt / "a.yaml"
        target.write_text(OLD)
        with contextlib.suppress(OSError), (mnt / "filler").open("wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        assert_refused(cli("answers", "init", "-o", str(target), "--force"), target, "no space left on the device")


def test_immutable_folder(tmp_path: Path) -> None:
    chattr = _tool("chattr")
    target = tmp_path / "a.yaml"
    target.write_text(OLD)
    locked = subprocess.run([chattr, "+i", str(tmp_path)], capture_output=True, text=True)
    if locked.returncode != 0:
        pytest.skip(f"SKIPPED: chattr +i is not supported here ({locked.stderr.strip()})")
    try:
        with pytest.raises(WriteError) as failed:
            write_private(target, "new\n")
    finally:
        subprocess.run([chattr, "-i", str(tmp_path)], check=True)
    assert failed.value.errno == 1 and "does not allow writing" in str(failed.value)
    assert target.read_text() == OLD and [p.name for p in tmp_path.iterdir()] == ["a.yaml"]


def test_success_is_private_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "a.yaml"
    write_private(target, OLD)
    write_private(target, "new\n")
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "sub").stat().st_mode & 0o777 == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["a.yaml"]


def test_backup_write_failure_is_one_line_and_nothing_applied(tmp_path: Path) -> None:
    """The backup goes through the same helper: a file where the backup folder should be is a ClusterError.

    (A folder named like the backup is no obstacle: backups take the next free name, ``b-2.yaml``.)
    """
    from wizard.cluster.applying.backup import Backup, write_backup
    from wizard.cluster.errors import ClusterError

    (tmp_path / "b.yaml").mkdir()
    written = write_backup(tmp_path, "b.yaml", Backup(context="c", server="s", objects=[]))
    assert written.name == "b-2.yaml"
    (tmp_path / "not-a-folder").write_text("x")
    with pytest.raises(ClusterError) as failed:
        write_backup(tmp_path / "not-a-folder", "b.yaml", Backup(context="c", server="s", objects=[]))
    assert "nothing was applied" in str(failed.value) and "\n" not in str(failed.value)


def test_the_tui_words_a_failed_write_as_one_line(tmp_path: Path) -> None:
    """The dialog text for a failed write (the Preview save, report export, crash log use it)."""
    from screens.errors import describe_error

    with pytest.raises(WriteError) as failed:
        write_private(tmp_path, "x")
    title, message, hint = describe_error(failed.value)
    assert title == "File not written" and "\n" not in message
    assert message.endswith("cannot write: it is a folder; give a file name; the previous file (if any) is unchanged")
    assert hint


async def test_the_tui_shows_a_failed_answers_save_in_a_dialog(tui_env: Path) -> None:
    """Saving the answers onto a folder: the dialog names it, the wizard goes on, no 'Saved to'."""
    from screens.app import WizardApp
    from screens.dialogs import ErrorDialog
    from tests.snapshots.plugin import screen_text, wait_for

    app = WizardApp(start_step="mode", report_dir=tui_env)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.state.answers_path = tui_env
        app.action_save_answers()
        await wait_for(pilot, lambda: isinstance(app.screen, ErrorDialog), 10, "the error dialog")
        text = screen_text(app)
        assert "File not written" in text and "it is a folder" in text, text
        assert "Traceback" not in text
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorDialog)
