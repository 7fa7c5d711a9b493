"""``make real-cluster`` stops its control plane on Ctrl-C or SIGTERM, however many signals come and when.

Its handlers used to set a ``threading.Event`` the main thread waited on: a second signal landing
while the main thread held the Event's lock deadlocked it (found hung on a futex with the whole
control plane left running). Here the lane's own stop path (:func:`tests.realcluster.__main__.run_until_stopped`)
runs a stand-in cluster (``tests/helpers/standin_cluster.py``: one ``sleep`` in its own process group,
no Go build needed) and gets a storm of SIGINT and SIGTERM: it must stop the component and exit.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("storm", [1, 2000])
def test_a_storm_of_stop_signals_stops_the_control_plane_and_exits(storm: int) -> None:
    lane = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.standin_cluster"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert lane.stdout is not None
        component = int(lane.stdout.readline().split()[1])
        assert lane.stdout.readline().startswith("export KUBECONFIG=")
        began = time.monotonic()
        for number in range(storm):
            try:
                lane.send_signal(signal.SIGINT if number % 2 else signal.SIGTERM)
            except ProcessLookupError:
                break
        code = lane.wait(20)
        assert time.monotonic() - began < 10
        # (a signal of the storm that lands once the lane has stopped and is exiting may end it: -2, -15)
        assert code in (0, -signal.SIGINT, -signal.SIGTERM), lane.stderr.read() if lane.stderr else ""
        assert lane.stdout.read().strip() == "stopped"  # the stop ran to its end
        time.sleep(0.2)
        assert not _alive(component)
    finally:
        if lane.poll() is None:
            lane.kill()
            lane.wait()


def test_the_wait_returns_none_after_its_timeout_and_the_signal_once_one_came() -> None:
    from tests.realcluster.__main__ import signals_woken

    with signals_woken((signal.SIGUSR1,)) as wait:
        assert wait(0.1) is None  # (a lane that polls, e.g. for the chart's Deployment, between waits)
        os.kill(os.getpid(), signal.SIGUSR1)
        assert wait(5) == signal.SIGUSR1
