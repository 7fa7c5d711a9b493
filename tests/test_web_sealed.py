"""A classroom session is sealed: whatever a student types, nothing leaves it and no file outside it answers.

The student (:mod:`tests.helpers.sealed_student`) runs in a network namespace of its own (``unshare``:
nothing outside this machine, or even outside the namespace, can be reached, so the test never
targets a real address) whose resolver is a stub on 127.0.0.1:53 and where a listener waits on a
loopback port (:mod:`tests.helpers.netwatch`). A control lookup and connection made before the seal
must be seen (the watcher works); after it, the student types a loopback registry, made-up host names
and mirrors into the Driver step, and ``/etc/passwd``, a folder, a missing file and ``../..`` into
"Registry CA file": the watcher must see nothing more, every network value must get the one "no network"
line, and every path outside the session's folder the same line whatever is there.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.web import PREFLIGHT_DONE, ServedWizard, Tab
from tests.helpers.sealed_student import CONTROL_NAME, file_values, network_values
from wizard import sealed

ROOT = Path(__file__).resolve().parent.parent


def _namespaces_work() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    probe = subprocess.run(["unshare", "-rnmpf", "true"], capture_output=True, check=False)
    return probe.returncode == 0


NAMESPACES = pytest.mark.skipif(not _namespaces_work(), reason="needs unshare -rnmpf (user and network namespaces)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@NAMESPACES
@pytest.mark.timeout(600)
def test_a_student_typing_hostile_values_reaches_no_network_and_no_file_outside_the_session(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "netwatch.log"
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n", encoding="ascii")
    python = sys.executable
    script = (
        f"ip link set lo up && mount --bind {resolv} /etc/resolv.conf && "
        f"{{ {python} -m tests.helpers.netwatch {log} {port} </dev/null >/dev/null 2>&1 & }} && "
        f"for i in $(seq 100); do grep -q ready {log} 2>/dev/null && break; sleep 0.1; done && "
        f"exec {python} -m tests.helpers.sealed_student {tmp_path / 'session'} {port}"
    )
    run = subprocess.run(
        ["unshare", "-rnmpf", "--kill-child", "sh", "-c", script],  # (the watcher ends with the student)
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert run.returncode == 0, run.stderr[-4000:]
    seen = json.loads(next(line[5:] for line in run.stdout.splitlines() if line.startswith("SEEN ")))
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    control = [{"ready": True}, {"dns": CONTROL_NAME}, {"connection": port}]
    # the watcher saw the control (it is not blind), and nothing after the seal
    assert [e for e in events if e not in control] == [], events
    assert all(e in events for e in control), events

    for field, values in network_values(port).items():
        for value in values:
            shown = seen[field][value]
            assert sealed.NO_NETWORK in shown, (field, value, shown)
            assert "ConnectionReset" not in shown and "does not resolve" not in shown

    home = tmp_path / "session" / "home"
    outside = [value for value in file_values(home) if not value.startswith(str(home))]
    lines = {value: seen["registry-ca"][value].replace(value, "PATH") for value in outside}
    for value, shown in lines.items():
        assert sealed.OUTSIDE in shown, (value, shown)
        for telling in ("no such file", "is a folder", "no PEM", "NUL", "not UTF-8", "root:"):
            assert telling not in shown, (value, shown)
    assert len(set(lines.values())) == 1, lines  # the same line whatever the path is
    inside = seen["registry-ca"][str(home / "mine.txt")]
    assert "no PEM certificate" in inside, inside  # the session's own files are read as usual


@pytest.mark.timeout(240)
async def test_a_sealed_session_reads_the_trainers_scenario_file_and_its_nodelist(tmp_path: Path) -> None:
    """The two files of the trainer's that a session reads: a scenario given by path, and the NodeList it names."""
    scenarios = ROOT / "assets" / "scenarios"
    (tmp_path / "nodes").mkdir()
    shutil.copy(scenarios / "nodelists" / "sl-micro-6.1.json", tmp_path / "nodes" / "mine.json")
    text = (scenarios / "from-nodelist.yaml").read_text(encoding="utf-8")
    own = tmp_path / "class.yaml"
    own.write_text(text.replace("nodelists/sl-micro-6.1.json", "nodes/mine.json"), encoding="utf-8")
    with ServedWizard("--max-sessions", "1", "--spares", "0", scenario=str(own)) as served:
        tab = Tab(served)
        await tab.open()
        await tab.read_until(PREFLIGHT_DONE, 120)  # its demo cluster started from the trainer's files
        await tab.close()
