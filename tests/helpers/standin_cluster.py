"""A stand-in for the real-cluster lane's control plane, for testing ``make real-cluster``'s stop without Go.

``python -m tests.helpers.standin_cluster`` runs :func:`tests.realcluster.__main__.run_until_stopped`
on a "cluster" whose one component is ``sleep`` in a process group of its own, as each real component
is: it prints the component's pid, then the kubeconfig line, and ``stopped`` once its group is ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.realcluster.__main__ import run_until_stopped


class StandIn:
    def __init__(self) -> None:
        self.component: subprocess.Popen[bytes] | None = None

    def start(self, nodes: list[dict[str, Any]], *, installed: bool = True) -> None:
        self.component = subprocess.Popen(["sleep", "600"], start_new_session=True)
        print(f"component {self.component.pid}", flush=True)

    def kubeconfig(self, user: str) -> Path:
        return Path(f"/nonexistent/{user}.kubeconfig")

    def chart_deployment(self) -> Any:
        return None  # the stand-in always starts "installed"

    def start_operator_when_installed(self) -> None:
        pass

    def stop(self) -> None:
        if self.component is not None:
            os.killpg(self.component.pid, signal.SIGTERM)
            self.component.wait(10)
        print("stopped", flush=True)


if __name__ == "__main__":
    sys.exit(run_until_stopped(StandIn(), [], "a stand-in", "admin"))
