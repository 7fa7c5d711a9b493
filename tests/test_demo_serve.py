"""``gpu-wizard demo serve`` keeps its token-bearing kubeconfig out of the current folder.

Without ``--kubeconfig`` the file goes to the state folder (``$XDG_STATE_HOME/gpu-wizard``), readable
by the owner only, and the banner's export line names that real path.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

SERVE = [sys.executable, "-c", "import sys; from wizard.demo.serve import main; sys.exit(main(sys.argv[1:]))"]
ROOT = Path(__file__).resolve().parent.parent


def test_demo_serve_writes_its_kubeconfig_to_the_state_folder(tmp_path: Path) -> None:
    work, state = tmp_path / "work dir", tmp_path / "state"
    work.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(state), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [*SERVE, "--scenario", "preinstalled", "--port", "0", "--step-delay", "0"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        banner = [server.stdout.readline() for _ in range(10)]
        expected = state / "gpu-wizard" / "demo.kubeconfig"
        assert f"  kubeconfig:  {expected} (context gpu-wizard-demo)\n" in banner
        assert f"  export KUBECONFIG={shlex.quote(str(expected))}\n" in banner
        assert expected.stat().st_mode & 0o777 == 0o600
        assert "token:" in expected.read_text()
        assert list(work.iterdir()) == []  # nothing token-bearing in the current folder
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=15)
    assert server.returncode == 0, err
    assert "stopping the demo cluster" in out
