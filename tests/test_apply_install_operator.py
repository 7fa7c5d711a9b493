"""``gpu-wizard apply --install-operator`` on a cluster without the operator, against the demo over real HTTPS.

Without ``helm`` on PATH the wizard prints the exact ``helm upgrade --install`` and the values file, then
waits for the operator. Here the test plays the person who runs that command where helm is: it renders
the release's real chart (``../shared/operator-charts``, through Helm's own library in helm-python-sdk)
with the values file the wizard wrote, and creates what the chart installs that the demo serves (the CRDs,
the operator Deployment, the ClusterPolicy) with a real kubectl. The demo's operator reconciles once the
chart's Deployment exists, and the first driver DaemonSet must already run the planned image: the chart's
default (NVIDIA's upstream driver) never appears.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.cluster import scenario
from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.helpers.operator_chart import run_the_printed_command
from tests.helpers.pty import read_until
from wizard.cli.main import main
from wizard.demo.api.bootstrap import CONTEXT
from wizard.demo.scenarios.scenario import OperatorSpec

RELEASE = "v26.7.0"
ANSWERS = (
    f"version: 1\noperator: {{version: {RELEASE}}}\nmode: precompiled\n"
    "driver: {version: 580.126.09.1, repository: registry.example.com/mlops}\n"
)
PLANNED = "registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166-default-sle-micro5.5"


@pytest.mark.parametrize("crds", [False, True], ids=["no-crds", "crds-no-deployment"])
def test_without_helm_the_command_is_printed_and_the_operator_awaited(
    demo_cluster: ClusterFactory,
    kubectl: Kubectl,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    crds: bool,
) -> None:
    demo = demo_cluster(scenario("sle-micro-precompiled", operator=OperatorSpec(installed=False, crds=crds)))
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    values = tmp_path / "install values.yaml"
    no_helm = tmp_path / "bin"
    no_helm.mkdir()
    monkeypatch.setenv("PATH", str(no_helm))  # no helm: the person runs the printed command
    done: list[str] = []
    person = threading.Thread(target=run_the_printed_command, args=(RELEASE, values, kubectl, demo, done), daemon=True)
    person.start()
    code = main(
        [
            "apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--install-operator",
            "--yes", "--helm-values", str(values), "--wait-timeout", "120",
        ]
    )  # fmt: skip
    person.join(timeout=60)
    out, err = capsys.readouterr()
    assert all(line.startswith("0: ") for line in done), done
    assert code == 0, err
    assert f"install GPU Operator {RELEASE} as Helm release gpu-operator in namespace gpu-operator" in out
    assert f"chart gpu-operator {RELEASE} from https://helm.ngc.nvidia.com/nvidia" in out
    assert f"  images:\n    nvcr.io/nvidia/gpu-operator:{RELEASE}\n" in out  # the operator's first, then every image
    assert f"    {PLANNED}\n" in out
    assert "helm is not on PATH" in err
    command = next(line.strip() for line in err.splitlines() if line.strip().startswith("helm upgrade"))
    assert shlex.split(command) == [
        "helm", "upgrade", "--install", "gpu-operator", "gpu-operator", "--repo", "https://helm.ngc.nvidia.com/nvidia",
        "--version", RELEASE, "--namespace", "gpu-operator", "--create-namespace", "--values", str(values),
        "--kubeconfig", str(demo.kubeconfig_path), "--kube-context", CONTEXT,
    ]  # fmt: skip
    assert values.stat().st_mode & 0o777 == 0o600
    assert "rollout: ready" in err
    daemonsets = [d for d in demo.store.list("daemonsets") if "driver" in d["metadata"]["name"]]
    images = {c["image"] for d in daemonsets for c in d["spec"]["template"]["spec"]["containers"]}
    assert PLANNED in images and not any(i.startswith("nvcr.io/nvidia/driver") for i in images), images
    assert os.environ["PATH"] == str(no_helm)


def test_install_flags_are_checked_before_connecting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    base = ["apply", "--answers", str(answers), "--kubeconfig", str(tmp_path / "absent")]
    assert main([*base, "--chart", "oci://bad host/x"]) == 2  # checked also where it names a helm upgrade's chart
    assert "--chart: 'oci://bad host/x' is not a local chart folder" in capsys.readouterr().err
    assert main([*base, "--install-operator", "--chart", "https://example.com/x.tgz"]) == 2
    assert "--chart: 'https://example.com/x.tgz' is not a local chart folder" in capsys.readouterr().err


def test_at_a_terminal_apply_offers_the_install(tmp_path: Path) -> None:
    """No operator and no --install-operator: at a terminal, apply asks; no is no, and preflight then says why."""
    import fcntl
    import os
    import subprocess
    import termios

    (tmp_path / "answers.yaml").write_text(ANSWERS)
    master, slave = os.openpty()
    argv = [
        sys.executable,
        "-m",
        "wizard",
        "apply",
        "--answers",
        str(tmp_path / "answers.yaml"),
        "--demo",
        "no-operator",
        "--no-registry",
    ]
    proc = subprocess.Popen(
        argv, cwd=Path(__file__).resolve().parent.parent, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )  # fmt: skip
    os.close(slave)
    try:
        seen = read_until(master, b"[y/N] ", proc, 60)
        said = " ".join(seen.decode(errors="replace").split())
        assert f"GPU Operator not installed: gpu-wizard will install {RELEASE} with your choices. Install it" in said
        os.write(master, b"n\n")
        rest = read_until(master, b"nothing applied", proc, 60)
        assert proc.wait(timeout=30) == 2
    finally:
        proc.kill()
        os.close(master)
    text = rest.decode(errors="replace")
    assert "gpu-wizard apply --install-operator" in text and "preflight failed; nothing applied" in text


def test_a_dry_run_writes_the_values_and_prints_the_command_only(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = demo_cluster(scenario("sle-micro-precompiled", operator=OperatorSpec(installed=False, crds=False)))
    answers = tmp_path / "answers.yaml"
    answers.write_text(ANSWERS)
    values = tmp_path / "values.yaml"
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    base = ["apply", "--answers", str(answers), *kube, "--helm-values", str(values), "--no-registry"]
    assert main([*base, "--install-operator", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: nothing installed; the command:\n  helm upgrade --install gpu-operator gpu-operator" in out, out
    assert values.is_file() and not demo.store.list("deployments") and not demo.store.list("customresourcedefinitions")

    # the same flag where an operator runs: said, and the apply goes on as usual
    running = demo_cluster("sle-micro-precompiled")
    assert main([*base[:3], "--kubeconfig", str(running.kubeconfig_path), "--install-operator", "--dry-run"]) == 0
    assert "! --install-operator: a GPU Operator already runs; applying to it" in capsys.readouterr().err


def test_the_tui_takes_the_chart_it_installs() -> None:
    """``gpu-wizard --chart REF``: the chart the TUI's Apply installs where no operator runs (air-gapped: a local
    folder); a bad one is refused before Textual loads, and its value is no subcommand."""
    from wizard.cli.common import UsageError, command_word
    from wizard.cli.main import tui_arguments

    assert command_word(["--chart", "apply"]) is None
    with pytest.raises(UsageError) as refused:
        tui_arguments(["--chart", "https://example.com/x.tgz"])
    assert "--chart: 'https://example.com/x.tgz' is not a local chart folder" in str(refused.value)
