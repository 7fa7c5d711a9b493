"""``gpu-wizard support-bundle``: the archive's contents, no credential anywhere in it, mode 0600,
an atomic overwrite on a repeat run, bad paths refused in one line, SKIPPED nvidia-smi in pre-installed mode."""

from __future__ import annotations

import io
import json
import stat
import tarfile
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as run
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.demo.scenarios.scenario import load_scenario

SECRET_VALUES = ("hunter2-registry-password", "hf_token_value_123", "aws-secret-value-456")


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_bundle_holds_what_support_asks_for_and_no_credential(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = load_scenario("kernel-drift")
    spec = scenario.operator.cluster_policy["spec"]  # type: ignore[index]
    spec["toolkit"]["env"] = [
        {"name": "REGISTRY_PASSWORD", "value": SECRET_VALUES[0]},
        {"name": "CONTAINERD_SOCKET", "value": "/run/containerd/containerd.sock"},  # the node's own: the toolkit runs
    ]
    spec["driver"]["env"] = [
        {"name": "HF_TOKEN", "value": SECRET_VALUES[1]},
        {"name": "AWS_SECRET_ACCESS_KEY", "value": SECRET_VALUES[2]},
    ]
    demo = demo_cluster(scenario)
    target = tmp_path / "support.tar.gz"
    kube = ("--kubeconfig", str(demo.kubeconfig_path))
    code, out, err = run(capsys, "support-bundle", *kube, "-o", str(target))
    assert code == 0, err
    assert f"wrote {target}" in out and "mode 0600" in out
    assert "gpu-wizard: support-bundle: reading the logs of 3 driver pods" in err  # progress on stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    files = members(target)
    names = {n.removeprefix("gpu-wizard-support/") for n in files}
    for expected in (
        "MANIFEST.txt",
        "gpu-wizard/version.json",
        "gpu-wizard/plan.json",
        "operator/clusterpolicies.json",
        "operator/nvidiadrivers.json",
        "operator/daemonsets.json",
        "operator/pods-summary.json",
        "operator/driver-pods.json",
        "operator/events.json",
        "nodes/gpu-node-labels.jsonl",
        "nvidia-smi/gpu-h100-01.txt",
        "nvidia-smi/gpu-h100-03.txt",
        "diagnosis.json",
    ):
        assert expected in names, expected
    assert any(n.startswith("logs/") and n.endswith("/nvidia-driver-ctr.log") for n in names)
    assert any(n.startswith("logs/") and n.endswith("/k8s-driver-manager.log") for n in names)
    prefix = "gpu-wizard-support/"
    assert b"==============NVSMI LOG==============" in files[prefix + "nvidia-smi/gpu-h100-01.txt"]
    assert files[prefix + "nvidia-smi/gpu-h100-03.txt"].startswith(b"SKIPPED: nvidia-driver-ctr is not running")
    labels = [json.loads(line) for line in files[prefix + "nodes/gpu-node-labels.jsonl"].splitlines()]
    assert [n["node"] for n in labels] == ["gpu-h100-01", "gpu-h100-02", "gpu-h100-03"]
    assert labels[2]["labels"]["feature.node.kubernetes.io/kernel-version.full"] == "5.15.0-1063-nvidia"
    diagnosis = json.loads(files[prefix + "diagnosis.json"])
    assert diagnosis[0]["data"]["findings"][0]["id"] == "precompiled-kernel-drift"
    # no credential anywhere: the demo's bearer token, its TLS private key, the env values named like secrets
    blob = b"\n".join(files.values())
    assert demo.token.encode() not in blob
    assert demo.ca_path is not None
    key_body = (demo.ca_path.parent / "tls.key").read_text().splitlines()[1]
    assert key_body.encode() not in blob
    for value in SECRET_VALUES:
        assert value.encode() not in blob, value
    assert b"<redacted>" in blob and b"/run/containerd/containerd.sock" in blob  # harmless env values stay
    assert b"last-applied-configuration" not in blob and b"managedFields" not in blob

    # a repeat run replaces the archive atomically: still 0600, still whole, no temp file left beside it
    code, _, err = run(capsys, "support-bundle", *kube, "-o", str(target))
    assert code == 0, err
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and "gpu-wizard-support/MANIFEST.txt" in members(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["support.tar.gz"]


def test_preinstalled_bundle_says_why_nvidia_smi_was_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "pre.tgz"
    answers = "assets/examples/preinstalled.answers.yaml"
    code, _, err = run(capsys, "support-bundle", "--demo", "preinstalled", "--answers", answers, "-o", str(target))
    assert code == 0, err
    skipped = members(target)["gpu-wizard-support/nvidia-smi/SKIPPED.txt"].decode()
    assert skipped.startswith("SKIPPED: pre-installed mode")


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ("{tmp}/missing/b.tar.gz", "the folder {tmp}/missing does not exist"),
        ("{tmp}/b.zip", "name it FILE.tar.gz"),
    ],
)
def test_a_bad_output_path_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str, error: str
) -> None:
    code, _, err = run(capsys, "support-bundle", "--demo", "kernel-drift", "-o", output.format(tmp=tmp_path))
    assert code == 2 and error.format(tmp=tmp_path) in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2


def test_archive_entries_are_private(tmp_path: Path) -> None:
    from wizard.cli.bundle import _archive

    with tarfile.open(fileobj=io.BytesIO(_archive({"a.txt": b"x"})), mode="r:gz") as tar:
        assert {m.name: m.mode for m in tar.getmembers()} == {
            "gpu-wizard-support/MANIFEST.txt": 0o600,
            "gpu-wizard-support/a.txt": 0o600,
        }


def test_a_read_the_cluster_refuses_is_skipped_with_its_reason_and_the_rest_written(
    demo_cluster: ClusterFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = load_scenario("kernel-drift")
    scenario.rbac_deny = [{"verb": "list", "resource": "events", "group": ""}]
    demo = demo_cluster(scenario)
    target = tmp_path / "b.tar.gz"
    code, _, err = run(capsys, "support-bundle", "--kubeconfig", str(demo.kubeconfig_path), "-o", str(target))
    assert code == 0, err
    files = members(target)
    skipped = files["gpu-wizard-support/operator/events.SKIPPED.txt"].decode()
    assert skipped.startswith("SKIPPED: ") and "forbidden" in skipped
    assert "gpu-wizard-support/operator/daemonsets.json" in files and "gpu-wizard-support/diagnosis.json" in files
