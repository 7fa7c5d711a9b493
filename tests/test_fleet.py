"""Many clusters in one run (issue 36, item 4): ``--context A --context B`` and ``--all-contexts`` on ``discover``,
``verify``, ``doctor`` and ``check-kernel``: a section per cluster with its verdict, one summary table, one exit
code; a cluster that cannot be reached is a line, not a stop. Demo clusters over real HTTPS, one kubeconfig
holding a context for each (tests/helpers/cluster.py ``fleet_kubeconfig``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from junitparser import JUnitXml

from tests.helpers.cli import run_cli as run
from tests.helpers.cluster import fleet_kubeconfig, scenario
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main


def table(out: str) -> dict[str, list[str]]:
    """The summary table's rows by cluster: [GPU NODES, DRIVER, VERDICT…]."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("CLUSTER  "))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1 :]:
        if " clusters: " in line:
            break
        cells = line.split()
        rows[cells[0]] = cells[1:]
    return rows


def test_discover_on_three_contexts_one_unreachable(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = fleet_kubeconfig(
        tmp_path / "kubeconfig",
        {"alpha": demo_cluster("mixed-os"), "beta": demo_cluster("sle-micro-precompiled")},
        unreachable=("gamma",),
    )
    code, out, err = run(capsys, "discover", "--kubeconfig", str(kube), "--all-contexts")
    assert code == 2  # the worst of all: one cluster could not be used
    sections = out.split("=== cluster ")[1:]
    assert [s.split(" ===", 1)[0] for s in sections] == ["alpha", "beta", "gamma"]  # in the order of the kubeconfig
    assert "gpu-03 " in sections[0] and "gpu-h200-01" not in sections[0]  # each cluster's own output in its section
    assert "gpu-h200-01" in sections[1] and "=== beta: ok (exit 0," in sections[1]
    assert "cannot connect to https://127.0.0.1:1" in sections[2] and "=== gamma: unusable (exit 2," in sections[2]
    rows = table(out)
    assert rows["alpha"][:3] == ["3", "none", "installed"] and rows["alpha"][3] == "ok"
    assert rows["beta"][0] == "2" and rows["beta"][3] == "ok"
    assert rows["gamma"][:3] == ["-", "-", "unusable:"]
    assert out.rstrip().endswith("3 clusters: 2 ok, 1 unusable; exit 2")
    assert not err  # every cluster's stderr is in its section

    code, out, err = run(
        capsys, "discover", "--kubeconfig", str(kube), "--context", "beta", "--context", "gamma", "-o", "json"
    )
    doc = json.loads(out)
    assert code == 2 and doc["exitCode"] == 2 and [c["context"] for c in doc["clusters"]] == ["beta", "gamma"]
    beta, gamma = doc["clusters"]
    assert (
        beta["exitCode"] == 0 and beta["gpuNodes"] == 2 and beta["report"]["recommendedMode"]["value"] == "precompiled"
    )
    assert gamma["report"] is None and "cannot connect" in gamma["error"]
    assert "[beta] cluster: context beta" in err  # stderr kept, each line naming its cluster

    code, out, _ = run(capsys, "discover", "--kubeconfig", str(kube), "--context", "beta")  # one: as before
    assert code == 0 and "=== cluster" not in out and "CLUSTER " not in out and "gpu-h200-01" in out


@pytest.mark.usefixtures("failed_rollout_settle")  # the rollout failed for good
def test_verify_on_two_clusters_writes_one_summary_and_a_suite_each(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = scenario("preinstalled")  # one more node, whose host driver fails nvidia-smi
    broken.nodes.append(dataclasses.replace(broken.nodes[1], name="gpu-bad", count=1, host_driver_broken=True))
    demos = {"east": demo_cluster("preinstalled"), "west": demo_cluster(broken)}
    plan = tmp_path / "answers.yaml"
    plan.write_text("version: 1\nmode: preinstalled\n")
    for demo in demos.values():
        apply = ["apply", "--answers", str(plan), "--kubeconfig", str(demo.kubeconfig_path), "--yes", "--no-wait"]
        assert main([*apply, "--backup-dir", str(tmp_path), "--allow-unverified-preinstalled"]) == 0
        demo.settle()
    kube = fleet_kubeconfig(tmp_path / "kubeconfig", demos)
    capsys.readouterr()
    junit = tmp_path / "fleet.xml"
    code, out, _ = run(
        capsys,
        "verify",
        "--kubeconfig",
        str(kube),
        "--context",
        "east",
        "--context",
        "west",
        "--no-registry",
        "--allow-skipped",
        "--timeout",
        "10",
        "--report-junit",
        str(junit),
    )
    assert code == 1
    east, west = out.split("=== cluster ")[1:]
    assert "✓ summary: all 2 GPU nodes verified" in east and "=== east: ok (exit 0," in east
    assert "✗ host-nvidia-smi gpu-bad" in west and "=== west: failed (exit 1," in west
    rows = table(out)
    assert rows["east"] == ["2", "pre-installed", "(host)", "ok"]
    assert rows["west"] == ["3", "pre-installed", "(host)", "failed"]
    assert out.rstrip().endswith("2 clusters: 1 ok, 1 failed; exit 1")
    suites = {suite.name: suite for suite in JUnitXml.fromfile(str(junit))}
    assert set(suites) == {"gpu-wizard verify east", "gpu-wizard verify west"}
    assert suites["gpu-wizard verify east"].failures == 0 and suites["gpu-wizard verify west"].failures >= 1

    code, out, _ = run(capsys, "drift", "--answers", str(plan), "--kubeconfig", str(kube), "--all-contexts")
    assert code == 0 and {row[-2:] == ["no", "drift"] for row in table(out).values()} == {True}


def test_doctor_and_check_kernel_take_several_contexts(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = fleet_kubeconfig(
        tmp_path / "kubeconfig", {"l4": demo_cluster("nouveau-loaded"), "clean": demo_cluster("ubuntu-upstream")}
    )
    code, out, _ = run(capsys, "doctor", "--kubeconfig", str(kube), "--all-contexts")
    assert code == 1
    rows = table(out)
    assert rows["l4"][-1] == "failed" and rows["clean"][-1] == "ok"
    assert f"doctor: checked {rows['l4'][0]} GPU node(s)" in out.split("=== cluster clean")[0]
    assert "nouveau-loaded on 2 nodes" in out.split("=== cluster clean")[0]

    sle = {"a": demo_cluster("sle-micro-precompiled"), "b": demo_cluster("sle-micro-precompiled")}
    kube = fleet_kubeconfig(tmp_path / "sle-kubeconfig", sle)
    answers = tmp_path / "sle.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580.126.09.1'\n  repository: registry.example.com/mlops\n"
    )
    code, out, _ = run(
        capsys, "check-kernel", "5.14.21-150500.55.166-default", "--answers", str(answers), "--kubeconfig", str(kube),
        "--all-contexts",
    )  # fmt: skip
    assert code == 0, out
    assert out.count("✓ registry.example.com/mlops/nvidia-driver:580.126.09.1-5.14.21-150500.55.166") == 2
    assert table(out)["a"] == ["2", "580.126.09.1", "(precompiled)", "ok"]


def test_bad_combinations_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "verify", "--demo", "preinstalled", "--context", "a", "--context", "b")
    assert code == 2 and err == (
        "gpu-wizard: error: --demo: one cluster only; leave it out with several --context or --all-contexts\n"
    )
    code, _, err = run(capsys, "doctor", "--all-contexts", "--context", "a")
    assert code == 2 and "--all-contexts: every context already; leave --context out" in err
    code, _, err = run(capsys, "discover", "--context", "a", "--context", "b", "--max-clusters", "0")
    assert code == 2 and "--max-clusters: 0 is not a positive number of clusters" in err


def test_a_kubeconfig_is_parsed_once_per_text_and_a_change_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cluster of a fleet run reads the one kubeconfig about seven times: its parse is done once per text
    (it was 80 % of a 10-cluster run's CPU), yet a rewritten file is read anew and no caller's change leaks."""
    from tests.helpers.cluster import kubeconfig
    from wizard.cluster.access import kubeconfig as kc

    parses: list[str] = []
    real = kc.parse_bounded

    def counted(text: str, *rest: object) -> object:
        parses.append(text)
        return real(text, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(kc, "parse_bounded", counted)
    path = kubeconfig(tmp_path / "kubeconfig", "https://127.0.0.1:6443", token="aaaa", context="one")
    for _ in range(5):
        assert kc.choose_context(str(path), None) == "one"
        document = kc.context_kubeconfig(str(path), "one")
        document["users"][0]["user"]["token"] = "changed by a caller"
    assert len(parses) == 1
    path.write_text(path.read_text().replace("aaaa", "bbbb"))  # same size, within the same clock tick
    assert kc.context_kubeconfig(str(path), "one")["users"][0]["user"]["token"] == "bbbb" and len(parses) == 2
