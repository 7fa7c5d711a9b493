"""The demo against the real thing: each recording of the real-cluster lane (what the real GPU Operator
made of a flow, tests/realcluster/recordings) is replayed on the demo cluster (with the change another tool
made after the apply, ``after``, where the flow has one), and the demo's operand DaemonSets must be the same
in the recorded view. A difference the demo keeps on purpose is listed in
recordings/known-differences.yaml with its reason; any other difference fails."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.helpers.fixtures.demo import ClusterFactory, Kubectl
from tests.realcluster import recording
from wizard.cli.main import main

KNOWN = recording.RECORDINGS / "known-differences.yaml"
CASES = recording.every_recording()


def _diff(real: Any, demo: Any, path: str = "") -> list[str]:
    """Paths (`a.b.c`) where the two views differ, with both values."""
    if isinstance(real, dict) and isinstance(demo, dict):
        out = []
        for key in sorted(set(real) | set(demo)):
            where = f"{path}.{key}" if path else str(key)
            if key not in demo:
                out.append(f"{where}: only in the real operator's ({json.dumps(real[key])[:120]})")
            elif key not in real:
                out.append(f"{where}: only in the demo's ({json.dumps(demo[key])[:120]})")
            else:
                out += _diff(real[key], demo[key], where)
        return out
    return [] if real == demo else [f"{path}: real {json.dumps(real)[:120]} != demo {json.dumps(demo)[:120]}"]


def known_differences() -> list[dict[str, str]]:
    return list(YAML(typ="safe").load(KNOWN.read_text()) or []) if KNOWN.is_file() else []


def _excused(line: str, flow: str, known: list[dict[str, str]]) -> bool:
    where = line.split(":", 1)[0]
    return any(fnmatch.fnmatchcase(where, k["path"]) and fnmatch.fnmatchcase(flow, k.get("flows", "*")) for k in known)


def _scenario(document: dict[str, Any], folder: Path) -> Path:
    """A demo scenario with the recording's nodes and a registry that holds every image the flow pulls."""
    nodes = []
    for item in document["nodes"]:
        labels = item["metadata"]["labels"]
        gpu = labels.get("feature.node.kubernetes.io/pci-10de.present") == "true"
        spec = {
            "name": item["metadata"]["name"],
            "os_id": labels["feature.node.kubernetes.io/system-os_release.ID"],
            "os_version": labels["feature.node.kubernetes.io/system-os_release.VERSION_ID"],
            "kernel": labels["feature.node.kubernetes.io/kernel-version.full"],
        }
        if gpu:
            spec |= {"gpu_product": labels.get("nvidia.com/gpu.product", "NVIDIA-H200"), "gpu_count": 1}
            if "mode: preinstalled" in document["answers"]:
                spec["host_driver"] = "580.126.20"
        else:
            spec["labels"] = {"node-role.kubernetes.io/control-plane": "true"}
        nodes.append(spec)
    catalog: dict[str, dict[str, str]] = {}
    for ds in document["daemonsets"].values():
        for container in ds["containers"].values():
            image = container["image"]
            if image.startswith(recording.REGISTRY + "/"):
                repo, tag = image.rsplit(":", 1)
                catalog.setdefault(repo, {})[tag] = "sha256:" + "ab" * 32
    scenario = {
        "name": f"replay-{document['flow']}",
        "operator": {"release": document["release"]},
        "nodes": nodes,
        "registry": {"hosts": [recording.REGISTRY], "catalog": catalog},
    }
    path = folder / "scenario.json"
    path.write_text(json.dumps(scenario))
    return path


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}-{p.stem}" for p in CASES])
def test_the_demo_makes_what_the_real_operator_made(
    case: Path, demo_cluster: ClusterFactory, kubectl: Kubectl, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = json.loads(case.read_text())
    demo = demo_cluster(str(_scenario(document, tmp_path)))
    if "configMapName: repo-config" in document["answers"]:  # the lane's admin created it before applying
        made = kubectl(
            demo, "create", "configmap", "repo-config", "-n", "gpu-operator", "--from-literal=local.list=deb x y z"
        )
        assert made.returncode == 0, made.stderr
    # a change of plan (`before`, then `answers`) is followed by the demo settling, whatever its rollout says
    steps = [document["before"], document["answers"]] if "before" in document else [document["answers"]]
    wait = ["--no-wait"] if "before" in document else []
    for text in steps:
        answers = tmp_path / "answers.yaml"
        answers.write_text(text)
        flags = ["--yes", *wait, "--backup-dir", str(tmp_path)]
        code = main(["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), *flags])
        out, err = capsys.readouterr()
        assert code == 0, err + out
        demo.settle()
    if "after" in document:  # the ClusterPolicy changed by another tool after the apply, as in the lane
        patched = kubectl(
            demo, "patch", "clusterpolicy", "cluster-policy", "--type", "merge", "-p", json.dumps(document["after"])
        )
        assert patched.returncode == 0, patched.stderr
        demo.settle()
    listed = kubectl(demo, "get", "daemonsets", "-n", "gpu-operator", "-o", "json")
    items = json.loads(listed.stdout)["items"]
    seen = recording.daemonsets_view(items, "", recording.stable_names(items))
    flow = f"{document['release']}/{document['flow']}"
    known = known_differences()
    real_view, demo_view = recording.wizard_view(document["daemonsets"]), recording.wizard_view(seen)
    unexplained = [d for d in _diff(real_view, demo_view) if not _excused(d, flow, known)]
    assert not unexplained, f"the demo differs from the real operator ({case}):\n" + "\n".join(unexplained)


def test_every_known_difference_still_happens_and_says_why() -> None:
    for entry in known_differences():
        assert entry.get("why", "").strip(), f"{KNOWN}: {entry['path']} has no reason"


def test_the_lane_recorded_every_flow_of_every_built_release() -> None:
    flows = {p.stem for p in CASES}
    assert {
        "precompiled-two-kernels",
        "upstream",
        "preinstalled",
        "nvidiadriver-mixed-os",
        "airgapped-repoconfig",
        "precompiled-then-driver-disabled",
        "nvidiadriver-then-crd-off",
        "crd-off-then-nvidiadriver",
    } <= flows
