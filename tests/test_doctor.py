"""``gpu-wizard doctor`` against the demo cluster: each before-apply scenario gives its finding and fix (exit 1),
a clean cluster gives exit 0, bad input exit 2; the probe pods are gone afterwards. The demo's node shell
answers the host steps (wizard/demo/sim/hostcmd.py); nothing the tool generates is executed here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cli.main import main


def doctor(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["doctor", *argv, "-o", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}, err


SCENARIOS = [
    ("nouveau-loaded", "nouveau-loaded", ["gpu-l4-01", "gpu-l4-02"], "update-initramfs -u"),
    ("secure-boot", "secure-boot-unsigned", ["gpu-a100-01", "gpu-a100-02"], "signed"),
    # a host driver loaded on two of three: pre-installed is recommended (issue 35), the third lacks one
    ("host-driver-present", "no-host-driver", ["gpu-h100-03"], "install the driver on the host"),
    (
        "preinstalled-old-branch",
        "driver-branch-unsupported",
        ["gpu-l40s-01", "gpu-l40s-02"],
        "nvidia-driver-595-server",
    ),
    ("preinstalled-no-dkms", "driver-not-at-boot", ["gpu-l40s-01", "gpu-l40s-02"], "nvidia-driver:580-dkms"),
    ("headers-missing", "no-package-source", ["gpu-h100-01", "gpu-h100-02"], "driver.repoConfig.configMapName"),
    ("noexec-run", "driver-dir", ["gpu-a10-01", "gpu-a10-02"], "remount /run with exec"),  # the Paths step's check
]


@pytest.mark.parametrize(("scenario", "finding", "nodes", "fix"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_doctor_finds_each_scenario_before_apply(
    capsys: pytest.CaptureFixture[str], scenario: str, finding: str, nodes: list[str], fix: str
) -> None:
    code, doc, _ = doctor(capsys, "--demo", scenario)
    assert code == 1
    problems = [f for f in doc["findings"] if f["status"] in ("fail", "warn")]
    assert [(f["check"], f["nodes"]) for f in problems] == [(finding, nodes)]
    assert fix in problems[0]["fix"]


RUNTIME_LINE = (
    "✓ runtime: container runtime: containerd at /run/containerd/containerd.sock → no toolkit env "
    "(the operator's defaults fit)"
)


@pytest.mark.parametrize("scenario", ["ubuntu-upstream", "preinstalled"])
def test_a_clean_cluster_exits_zero(capsys: pytest.CaptureFixture[str], scenario: str) -> None:
    code, doc, _ = doctor(capsys, "--demo", scenario)
    assert code == 0, doc
    found = [f for f in doc["findings"] if f["status"] != "pass"]
    assert [f["status"] for f in found] == (["skipped"] if scenario == "ubuntu-upstream" else [])
    runtime = [f for f in doc["findings"] if f["check"] == "runtime"]
    assert runtime[0]["message"] == RUNTIME_LINE.removeprefix("✓ runtime: ")  # said, never a finding
    if found:  # without --answers no driver version is named: the image check could not run
        assert doc["findings"][0]["check"] == "driver-image" and "--answers" in doc["findings"][0]["message"]


def test_text_output_groups_nodes_and_prints_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--demo", "nouveau-loaded"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out.splitlines() == [
        "✗ nouveau-loaded on 2 nodes (gpu-l4-01, gpu-l4-02): the open-source nouveau driver is loaded: the NVIDIA "
        "kernel module cannot bind to the GPUs while it holds them",
        "    fix: printf 'blacklist nouveau\\noptions nouveau modeset=0\\n' | sudo tee "
        "/etc/modprobe.d/blacklist-nouveau.conf && sudo update-initramfs -u && sudo reboot",
        "- SKIPPED driver-image: driver images not checked: no plan names a driver version yet (pass --answers FILE)",
        RUNTIME_LINE,
        "1 finding(s) on 2 node(s); 1 check(s) SKIPPED",
    ]
    assert "doctor: checked 3 GPU node(s) for mode upstream, operator v26.7.0" in err


def test_node_filter_answers_and_bad_input(
    capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory, tmp_path: Path
) -> None:
    from tests.helpers.fixtures.demo import kubectl_binary

    demo = demo_cluster("nouveau-loaded")
    kube = ["--kubeconfig", str(demo.kubeconfig_path)]
    code, doc, _ = doctor(capsys, *kube, "--node", "gpu-l4-03")
    assert (code, doc["gpuNodes"]) == (0, 1)
    assert [f["status"] for f in doc["findings"]] == ["skipped", "pass"]
    code, doc, _ = doctor(capsys, *kube, "--node", "gpu-l4-02")
    assert code == 1 and doc["findings"][0]["nodes"] == ["gpu-l4-02"]
    answers = tmp_path / "answers.yaml"
    answers.write_text("version: 1\nmode: preinstalled\n", encoding="utf-8")
    code, doc, _ = doctor(capsys, *kube, "--answers", str(answers))
    assert code == 1 and doc["planFrom"] == f"answers {answers}"
    checks = {f["check"]: f["nodes"] for f in doc["findings"]}
    assert checks["no-host-driver"] == ["gpu-l4-01", "gpu-l4-02", "gpu-l4-03"]
    code = main(["doctor", *kube, "--node", "cp-01"])
    _, err = capsys.readouterr()
    assert code == 2 and "gpu-wizard: error: no GPU node named 'cp-01' in the cluster" in err
    answers.write_text("version: 1\nmode: sideways\n", encoding="utf-8")
    code = main(["doctor", *kube, "--answers", str(answers)])
    _, err = capsys.readouterr()
    assert code == 2 and "mode" in err and "Traceback" not in err
    binary = kubectl_binary()
    if binary is not None:  # every probe pod of the runs above is gone
        from tests.helpers.fixtures.demo import Kubectl

        pods = Kubectl(binary, tmp_path)(demo, "get", "pods", "-A", "-o", "name")
        assert "probe" not in pods.stdout
        left = Kubectl(binary, tmp_path)(demo, "get", "daemonsets,jobs", "-A", "-o", "name")
        assert "probe" not in left.stdout


def test_the_readme_transcript_is_what_doctor_prints(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("$ gpu-wizard doctor --demo nouveau-loaded\n", 1)[1].split("```", 1)[0].splitlines()
    code = main(["doctor", "--demo", "nouveau-loaded"])
    out, err = capsys.readouterr()
    assert code == 1
    assert block[2:] == out.splitlines()
    assert block[1] == err.splitlines()[-1]  # the doctor line (the banner's port changes every run)


def test_driver_images_missing_for_a_kernel_are_findings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(
        "version: 1\nmode: precompiled\ndriver:\n  version: '580'\n  repository: nvcr.io/nvidia\n  image: driver\n",
        encoding="utf-8",
    )
    code, doc, _ = doctor(capsys, "--demo", "missing-tuple", "--answers", str(answers))
    assert code == 1
    images = [f for f in doc["findings"] if f["check"] == "driver-image"]
    assert [(f["status"], f["nodes"]) for f in images] == [("fail", ["gpu-a-01", "gpu-a-02"]), ("fail", ["gpu-b-01"])]
    assert "ImagePullBackOff" in images[0]["message"] and "check-kernel" in images[0]["fix"]


async def test_facade_host_doctor_judges_the_plan_and_leaves_no_probe_pod(demo_cluster: ClusterFactory) -> None:
    """``Cluster.host_doctor(plan)``: the findings for that plan, per node as each finishes; the pods removed."""
    from tests.helpers.cluster import connected, preinstalled_plan, upstream_plan

    demo = demo_cluster("secure-boot")
    async with connected(demo) as cluster:
        upstream = [c async for c in cluster.host_doctor(upstream_plan())]
        assert sorted((c.check, c.node) for c in upstream) == [
            ("secure-boot-unsigned", "gpu-a100-01"),
            ("secure-boot-unsigned", "gpu-a100-02"),
        ]
        preinstalled = [c async for c in cluster.host_doctor(preinstalled_plan(), ["gpu-a100-02"])]
        assert [(c.check, c.node) for c in preinstalled] == [("no-host-driver", "gpu-a100-02")]
        pods = await cluster.gateway.list_pods("gpu-operator")
        assert not [p for p in pods if "probe" in p["metadata"]["name"]]


def test_after_a_failed_install_doctor_explains_the_failing_driver_pod(capsys: pytest.CaptureFixture[str]) -> None:
    """kernel-drift: installed, then a node took a kernel without a precompiled image. doctor's diagnosis
    source reads the failing driver pod and names the known failure (operator #1220) with its fix."""
    code, doc, _ = doctor(capsys, "--demo", "kernel-drift")
    assert code == 1
    diagnosis = [f for f in doc["findings"] if f["check"] == "diagnosis"]
    assert [f["nodes"] for f in diagnosis] == [["gpu-h100-03"]]
    assert "#1220" in diagnosis[0]["message"] and "check-kernel 5.15.0-1063-nvidia" in diagnosis[0]["fix"]


def test_doctor_names_the_runtime_flavour_and_its_toolkit_settings(capsys: pytest.CaptureFixture[str]) -> None:
    """SLE Micro on RKE2: the toolkit needs RKE2's containerd socket, config and drop-in (issue 13, runtime bullet)."""
    code, doc, _ = doctor(capsys, "--demo", "sle-micro-precompiled")
    assert code == 0, doc
    (runtime,) = [f for f in doc["findings"] if f["check"] == "runtime"]
    assert runtime["message"].startswith("container runtime: RKE2 (containerd at /run/k3s/containerd/containerd.sock)")
    assert "CONTAINERD_SOCKET" in runtime["message"] and "RUNTIME_DROP_IN_CONFIG" in runtime["message"]


def test_doctor_recommends_from_the_pull_registry_and_names_the_tag_secure_boot_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without answers doctor judges the mode the TUI and ``answers init`` recommend, the pull registry read
    (issue 35 item 2): ubuntu-upstream's nvcr.io holds its kernel's precompiled tag; a Secure Boot node on a
    kernel the registry lacks gets the missing tag named, not "use mode: precompiled"."""
    from ruamel.yaml import YAML

    from wizard.bundled import asset_text

    code = main(["doctor", "--demo", "ubuntu-upstream"])
    _, err = capsys.readouterr()
    assert "for mode precompiled" in err and "the registry holds a precompiled image for every kernel" in err, err
    data = YAML(typ="safe").load(asset_text("scenarios", "mixed-trouble.yaml"))
    for node in data["nodes"]:
        if node.get("secure_boot"):
            node["kernel"] = "5.15.0-1048-nvidia"  # the registry holds 580-5.15.0-1063-… only
    scenario = tmp_path / "secure-boot-untagged.yaml"
    with scenario.open("w", encoding="utf-8") as out:
        YAML().dump({**data, "name": "secure-boot-untagged"}, out)
    code = main(["doctor", "--demo", str(scenario)])
    out, err = capsys.readouterr()
    assert code == 1 and "for mode upstream" in err, err
    assert "✗ secure-boot-unsigned on 1 node (gpu-l40s-3)" in out, out
    assert "nvcr.io/nvidia/driver lacks 580-5.15.0-1048-nvidia-ubuntu22.04: push or mirror that tag there" in out
    assert "fix: use mode: precompiled" not in out


def test_headers_missing_names_the_precompiled_tag_the_air_gapped_registry_lacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """headers-missing walked at 80x24 (issue 35): the fix ended "or use mode: precompiled", but the air-gapped
    registry the nodes pull from holds no precompiled image for their kernel: that way out needs a push first."""
    code, doc, _ = doctor(capsys, "--demo", "headers-missing")
    assert code == 1
    (found,) = [f for f in doc["findings"] if f["status"] == "fail"]
    assert "or push or mirror " in found["fix"], found["fix"]
    assert (
        "-5.15.0-1048-nvidia-ubuntu22.04 to registry.airgap.local/nvidia/driver, then use mode: precompiled"
        in (found["fix"])
    )
