"""Interrupts of ``gpu-wizard apply``, sent to the real CLI as a subprocess: all or nothing, and said so.

SIGINT, SIGTERM and a double Ctrl-C arrive while the second object (the NVIDIADriver) is on its
way (the demo holds that request back); the cluster must end fully applied or unchanged, and the
message must name the backup and the rollback command. At the confirmation prompt (a pty), Ctrl-C
ends the command at once and EOF means no.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.pty import read_until

ROOT = Path(__file__).resolve().parent.parent
ANSWERS = """version: 1
mode: precompiled
driver:
  version: '580.126.09.1'
  repository: registry.example.com/mlops
  useNvidiaDriverCRD: true
toolkit:
  installDir: /run/nvidia/toolkit-install
"""


def _cli(*argv: str) -> list[str]:
    return [sys.executable, "-m", "wizard", *argv]


def _wait_until(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize(
    "signals",
    [(signal.SIGINT,), (signal.SIGTERM,), (signal.SIGINT, signal.SIGINT)],
    ids=["sigint", "sigterm", "double-sigint"],
)
def test_interrupt_between_the_objects_finishes_the_apply_and_names_the_backup(
    signals: tuple[signal.Signals, ...], demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    demo = demo_cluster("sle-micro-precompiled")
    faults = demo.faults  # the real NVIDIADriver apply waits 1.5 s on the server: the window for the signals
    faults.only, faults.methods, faults.latency_ms = ["/apis/nvidia.com/v1alpha1/nvidiadrivers"], ["PATCH"], 1500
    faults.when = lambda request: "dryRun" not in request.query
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    argv = _cli(
        "apply", "--answers", str(tmp_path / "answers.yaml"), "--kubeconfig", str(demo.kubeconfig_path),
        "--yes", "--no-wait", "--no-registry", "--backup-dir", str(tmp_path / "backups"),
    )  # fmt: skip
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_until(lambda: faults.injected["latency"] >= 1 or proc.poll() is not None, 20, "the NVIDIADriver apply")
        assert demo.store.get("clusterpolicies", "cluster-policy") is not None  # the first object is written
        assert demo.store.get("nvidiadrivers", "default") is None  # the second one is not, yet
        for number, signum in enumerate(signals):
            if number:
                time.sleep(0.2)
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted during the apply, which was completed first" in err
    (backup,) = (tmp_path / "backups").iterdir()
    assert f"to undo it: gpu-wizard rollback --backup {backup}" in err
    if len(signals) > 1:
        assert "finishing the apply first" in err
    assert "Traceback" not in err
    policy = demo.store.get("clusterpolicies", "cluster-policy")
    assert policy is not None and policy["spec"]["driver"]["useNvidiaDriverCRD"] is True
    assert demo.store.get("nvidiadrivers", "default") is not None  # fully applied, not half


def _prompt(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``apply`` without --yes on a terminal (a pty is its stdin and stderr), stopped at the prompt."""
    (tmp_path / "answers.yaml").write_text(ANSWERS)
    master, slave = os.openpty()
    argv = _cli(
        "apply", "--answers", str(tmp_path / "answers.yaml"), "--demo", "sle-micro-precompiled", "--no-wait",
        "--no-registry", "--backup-dir", str(tmp_path / "backups"),
    )  # fmt: skip
    with (tmp_path / "stdout").open("wb") as stdout:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdin=slave,
            stdout=stdout,
            stderr=slave,
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # the pty is its terminal: ^C is SIGINT
        )
    os.close(slave)
    seen = read_until(master, b"[y/N] ", proc)
    assert b"[y/N] " in seen, seen.decode(errors="replace")
    return proc, master


@pytest.mark.parametrize(("key", "code"), [(b"\x03", 130), (b"\x04", 0)], ids=["ctrl-c", "eof"])
def test_confirmation_prompt_ctrl_c_exits_at_once_and_eof_is_no(tmp_path: Path, key: bytes, code: int) -> None:
    proc, master = _prompt(tmp_path)
    try:
        os.write(master, key)
        started = time.monotonic()
        rest = b""
        # No Enter is ever sent: a prompt that waited for one would still be running when this loop gives up.
        # (The bound is generous, not a speed check: on a loaded machine an exit alone took over 4 s.)
        while proc.poll() is None and time.monotonic() - started < 30:
            rest += read_until(master, b"\x00never", proc, 0.2)
        assert proc.poll() == code, rest.decode(errors="replace")
        rest += read_until(master, b"\x00never", proc, 0.2)
    finally:
        proc.kill()
        os.close(master)
    text = rest.decode(errors="replace")
    assert ("gpu-wizard: interrupted" if code == 130 else "nothing applied") in text
    assert "Traceback" not in text
    assert not (tmp_path / "backups").exists()  # nothing was applied, nothing backed up
