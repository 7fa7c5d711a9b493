"""``gpu-wizard apply`` checks the GPU nodes' hosts before anything is written (issue 35, defect 2).

Nouveau, Secure Boot under an unsigned driver, a noexec ``/run``: each used to surface only when the rollout
failed minutes after apply. The demo cluster answers the host probe from its scenario, over real HTTPS.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli as _run
from tests.helpers.fixtures.demo import ClusterFactory
from wizard.cluster.facade import Cluster
from wizard.engine.facts import ClusterFacts, NodeFacts
from wizard.engine.hostsample import AUTO_HOSTS, PER_GROUP, host_sample

UPSTREAM = "version: 1\nmode: upstream\ndriver:\n  version: '580.126.20'\n  repository: nvcr.io/nvidia\n"


async def _written(kubeconfig: str) -> tuple[object, int]:
    """The live ClusterPolicy (None: none) and how many objects the wizard's probe left in the operator namespace."""
    async with await Cluster.connect(kubeconfig=kubeconfig) as cluster:
        preflight = await cluster.preflight()
        found, _ = await cluster.clean_up_probes(dry_run=True)
        return preflight.cluster_policy, len(found)


def test_dry_run_names_the_host_problems_with_their_nodes_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    demo = demo_cluster("mixed-trouble", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM)
    kubeconfig = str(demo.kubeconfig_path)
    code, out, err = _run(capsys, "apply", "--answers", str(answers), "--kubeconfig", kubeconfig, "--dry-run")
    assert code == 1, err
    assert "✗ nouveau-loaded on 1 node (gpu-l40s-1):" in err and "blacklist nouveau" in err
    assert "✗ secure-boot-unsigned on 1 node (gpu-l40s-3):" in err and "use mode: precompiled" in err
    assert "✗ driver-dir on 1 node (gpu-l40s-2):" in err and "/run is mounted noexec" in err
    assert "found 3 blocking problem(s) on 3 node(s) (checked all 3 GPU nodes); nothing applied" in err
    assert "kind: ClusterPolicy" not in out and "dry run:" not in err  # stopped before the dry-run and the diff
    policy, leftovers = asyncio.run(_written(kubeconfig))
    assert policy is None and leftovers == 0

    code, out, err = _run(
        capsys, "apply", "--answers", str(answers), "--kubeconfig", kubeconfig, "--dry-run", "--allow-host-findings"
    )
    assert code == 0 and "+kind: ClusterPolicy" in out and "going on (--allow-host-findings)" in err


def test_secure_boot_on_a_kernel_the_registry_lacks_names_the_tag_not_precompiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """Issue 35 item 2: "use mode: precompiled" is no fix while nvcr.io lacks the Secure Boot node's signed tuple."""
    from ruamel.yaml import YAML

    from wizard.bundled import asset_text

    data = YAML(typ="safe").load(asset_text("scenarios", "mixed-trouble.yaml"))
    for node in data["nodes"]:
        if node.get("secure_boot"):
            node["kernel"] = "5.15.0-1048-nvidia"  # the registry holds 580-5.15.0-1063-… only
    scenario = tmp_path / "secure-boot-untagged.yaml"
    with scenario.open("w", encoding="utf-8") as out:
        YAML().dump({**data, "name": "secure-boot-untagged"}, out)
    demo = demo_cluster(str(scenario), step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM)
    argv = ("apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--dry-run")
    code, _, err = _run(capsys, *argv)
    assert code == 1 and "✗ secure-boot-unsigned on 1 node (gpu-l40s-3):" in err, err
    assert "nvcr.io/nvidia/driver lacks 580-5.15.0-1048-nvidia-ubuntu22.04: push or mirror that tag there" in err
    assert "fix: use mode: precompiled" not in err


def test_a_healthy_cluster_says_its_hosts_were_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    demo = demo_cluster("ubuntu-upstream", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM)
    argv = ("apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--dry-run")
    code, _, err = _run(capsys, *argv)
    assert code == 0 and "✓ hosts: no blocking finding on all 3 GPU nodes" in err
    code, _, err = _run(capsys, *argv, "--no-host-check")
    assert code == 0 and "! hosts: not checked (--no-host-check)" in err


def _node(name: str, kernel: str) -> NodeFacts:
    return NodeFacts(
        name=name,
        kernel=kernel,
        kernel_source="nfd",
        os_id="ubuntu",
        os_version="22.04",
        os_source="nfd",
        os_image="Ubuntu 22.04.5 LTS",
        gpu=True,
        gpu_product="NVIDIA-H100",
        gpu_count=8,
        deploy_driver="",
        container_runtime="containerd://1.7.23",
    )


def test_the_sample_is_every_node_up_to_the_limit_then_a_few_per_kernel_and_os() -> None:
    few = ClusterFacts([_node(f"gpu-{i:03}", "5.15.0-1048-nvidia") for i in range(AUTO_HOSTS)])
    assert (
        host_sample(few, "v26.7.0").nodes == tuple(n.name for n in few.gpu_nodes)
        and not host_sample(few, "v26.7.0").rest
    )
    many = ClusterFacts(
        [_node(f"gpu-a{i:03}", "5.15.0-1048-nvidia") for i in range(100)]
        + [_node(f"gpu-b{i:03}", "5.15.0-1063-nvidia") for i in range(100)]
    )
    sample = host_sample(many, "v26.7.0")
    assert len(sample.nodes) == 2 * PER_GROUP and sample.rest == 200 - 2 * PER_GROUP
    assert {n[:5] for n in sample.nodes} == {"gpu-a", "gpu-b"}  # every (kernel, OS) group seen
    assert sample.describe() == f"{2 * PER_GROUP} of 200 GPU nodes ({PER_GROUP} per kernel and OS)"
    assert len(host_sample(many, "v26.7.0", everything=True).nodes) == 200


def test_apply_says_a_downgrade_as_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """Issue 35, defect 10: the live 570.195.03 moved back to 570.124.06 is a warning in apply, too."""
    demo = demo_cluster("existing-install-plain", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM.replace("580.126.20", "570.124.06") + "operator:\n  version: v26.3.3\n")
    argv = ("apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--dry-run")
    code, _, err = _run(capsys, *argv, "--no-registry", "--no-host-check")
    assert code == 0, err
    assert "warning driver-downgrade: driver 570.195.03 → 570.124.06 is a downgrade" in err


def test_a_noexec_run_found_before_apply_explains_the_failure_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """Issue 35, defect 4: the validator's ``permission denied … exit status 126`` got "no known cause matched"."""
    demo = demo_cluster("noexec-run", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM)
    argv = ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes"]
    argv += ["--allow-host-findings", "--crash-window", "5", "--wait-timeout", "90", "--backup-dir", str(tmp_path)]
    code, _, err = _run(capsys, *argv)
    assert code == 1
    assert "✗ driver-dir on 2 nodes (gpu-a10-01, gpu-a10-02):" in err  # said before apply
    block = err.split("\ndiagnosis (", 1)[1]
    assert "a host folder the driver or toolkit runs from is mounted noexec" in block, block
    assert "Remount that folder's file system with exec on gpu-a10-01" in block
    assert "no known cause matched" not in block


def test_a_rollout_failing_on_a_host_found_unfit_before_apply_ends_at_once_naming_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """Issue 35, defect 3: nouveau (gpu-l40s-1) and a noexec /run (gpu-l40s-2) found before apply and overridden;
    the rollout used to wait out its 300 s crash window, then quote the driver pod's last log line ("keeps failing:
    Unmounting NVIDIA driver rootfs...") instead of the cause the wizard already knew."""
    demo = demo_cluster("mixed-trouble", step_delay=0.0)
    answers = tmp_path / "answers.yaml"
    answers.write_text(UPSTREAM)
    argv = ["apply", "--answers", str(answers), "--kubeconfig", str(demo.kubeconfig_path), "--yes"]
    # the default crash window (300 s); the old follower ran into the wait timeout instead of ending at once
    argv += ["--allow-host-findings", "--crash-window", "300", "--wait-timeout", "30", "--backup-dir", str(tmp_path)]
    started = time.monotonic()
    code, _, err = _run(capsys, *argv)
    took = time.monotonic() - started
    assert code == 1, err
    rollout = next(line for line in err.splitlines() if line.startswith("rollout: failed:"))
    assert "failed as found before apply (overridden)" in rollout and "gpu-l40s-1: nouveau-loaded" in rollout
    assert "gpu-l40s-2: driver-dir" in rollout and "keeps failing" not in err and "not ready after" not in err
    cause = next(line for line in err.splitlines() if line.startswith("  ✗ gpu-l40s-1: "))
    assert "nouveau driver is loaded" in cause and "(found before apply as nouveau-loaded, overridden)" in cause
    assert "blacklist nouveau" in cause  # its fix
    assert took < 25, f"the rollout took {took:.1f} s"  # the apply, host probe and rollout together, well under 300 s


def test_only_a_node_with_a_finding_before_apply_skips_the_crash_window() -> None:
    """A driver on a sound host may restart while it compiles: there the crash window still holds."""
    from wizard.cluster.core.rollout_cache import PodStatus
    from wizard.cluster.rollouts.rollout_verdict import known_failure
    from wizard.engine.prior_findings import by_node
    from wizard.engine.results import Check, Status

    found = by_node(
        [
            Check("nouveau-loaded", Status.FAIL, "the open-source nouveau driver is loaded", "gpu-1", "blacklist it"),
            Check("driver-not-at-boot", Status.FAIL, "the host driver is not loaded at boot", "gpu-2", "enable it"),
        ]
    )
    assert list(found) == ["gpu-1"]  # a finding of later holds no apply: it foretells no failure of this rollout
    crashing = PodStatus("nvidia-driver-daemonset-x", "gpu-2", "Running", "CrashLoopBackOff", "", "nvidia-driver-ctr")
    assert known_failure([crashing], found) == ("", ())
    starting = PodStatus("nvidia-driver-daemonset-y", "gpu-1", "Pending", "ErrImagePull", "", "nvidia-driver-ctr")
    assert known_failure([starting], found) == ("", ())  # not the host's failure: the image checks say that one
    restarted = replace(crashing, phase="Running", reason="", restarts=1)  # running again after one failure
    assert known_failure([restarted], found) == ("", ())
    assert known_failure([replace(restarted, node="gpu-1")], found)[0].endswith("gpu-1: nouveau-loaded")
    assert known_failure([replace(restarted, node="gpu-1", restarts=0)], found) == ("", ())
    message, causes = known_failure([crashing, replace(crashing, node="gpu-1")], found)
    assert message == "failed as found before apply (overridden) on 1 node(s): gpu-1: nouveau-loaded"
    assert causes == (
        "gpu-1: the open-source nouveau driver is loaded (found before apply as nouveau-loaded, overridden): "
        "blacklist it",
    )


def test_the_newcomers_own_answers_stop_before_any_write_naming_nouveau_and_secure_boot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], demo_cluster: ClusterFactory
) -> None:
    """Issue 35's Done-when: ``answers init`` then ``apply --dry-run`` on mixed-trouble. The defaults choose
    precompiled (its signed modules load under Secure Boot): nouveau and the noexec /run stop the apply, and Secure
    Boot is named with its node as what the mode answers, not passed over in silence."""
    demo = demo_cluster("mixed-trouble", step_delay=0.0)
    kubeconfig = str(demo.kubeconfig_path)
    code, out, err = _run(capsys, "answers", "init", "--kubeconfig", kubeconfig)
    assert code == 0, err
    answers = tmp_path / "answers.yaml"
    answers.write_text(out)
    code, out, err = _run(capsys, "apply", "--answers", str(answers), "--kubeconfig", kubeconfig, "--dry-run")
    assert code == 1, err
    assert "✗ nouveau-loaded on 1 node (gpu-l40s-1):" in err and "blacklist nouveau" in err
    assert "✓ secure-boot on 1 node (gpu-l40s-3): Secure Boot is on: the precompiled driver's modules are signed" in err
    assert "nothing applied" in err and "kind: ClusterPolicy" not in out
    policy, leftovers = asyncio.run(_written(kubeconfig))
    assert policy is None and leftovers == 0
