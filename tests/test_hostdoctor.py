"""The node doctor's rules (wizard/engine/hostdoctor.py): the host steps as text, reading their output, the
findings per mode and OS, grouping, and the driver-branch table. Pure: no cluster, nothing executed."""

from __future__ import annotations

import shlex

from wizard.engine.grouping import group_findings
from wizard.engine.hostdoctor import (
    DoctorTarget,
    HostState,
    host_findings,
    host_steps,
    read_host,
    states_findings,
    supported_branches,
)
from wizard.engine.modes import Mode
from wizard.engine.nodescript import Step, StepResult, script
from wizard.engine.plan import KNOWN_RELEASES, Plan
from wizard.engine.releases import rules
from wizard.engine.results import Status

KERNEL = "5.15.0-1048-nvidia"
UPSTREAM = DoctorTarget(Mode.UPSTREAM)
PRECOMPILED = DoctorTarget(Mode.PRECOMPILED)
PREINSTALLED = DoctorTarget(Mode.PREINSTALLED)

CLEAN = {
    "modules": (1, ""),
    "nvidia-version": (2, "grep: /proc/driver/nvidia/version: No such file or directory"),
    "host-nvidia-smi": (127, "chroot: failed to run command 'nvidia-smi': No such file or directory"),
    "uname": (0, KERNEL),
    "mokutil": (0, "SecureBoot disabled"),
    "efi-secure-boot": (127, "chroot: failed to run command 'od'"),
    "dkms": (0, ""),
    "modinfo": (1, "modinfo: ERROR: Module nvidia not found."),
    "headers": (0, f"/lib/modules/{KERNEL}/build"),
    "df:/var": (0, " Avail Mounted on\n200000 /"),
    "df:/usr": (0, " Avail Mounted on\n200000 /"),
    "resolve:archive.ubuntu.com": (0, "203.0.113.10 archive.ubuntu.com"),
}


def result(code: int, out: str) -> StepResult:
    return StepResult(out, code)


def make(
    os_id: str = "ubuntu",
    target: DoctorTarget = UPSTREAM,
    node: str = "gpu-01",
    cut: dict[str, str] | None = None,
    **changes: tuple[int, str],
) -> HostState:
    steps = host_steps(target, [os_id])
    outputs = {**CLEAN, **changes}
    resolved = (0, "203.0.113.10 mirror")  # every package host resolves unless a test says otherwise
    return read_host(
        node,
        os_id,
        steps,
        [
            result(*outputs.get(s.check, resolved if s.check.startswith("resolve:") else (127, "sh: not found")))
            for s in steps
        ],
        cut,
    )


def codes(target: DoctorTarget, host: HostState) -> dict[str, Status]:
    return {c.check: c.status for c in host_findings(target, host)}


def test_host_steps_are_fixed_argv_on_the_host_with_no_shell() -> None:
    steps = host_steps(DoctorTarget(Mode.UPSTREAM, toolkit_dir="/run/nvidia/toolkit-install"), ["ubuntu", "rocky", "x"])
    assert all(isinstance(s, Step) and s.host for s in steps)
    assert not any(s.argv[0] in ("sh", "bash") for s in steps), "no shell: nothing to inject into"
    text = script(steps, "/host")
    assert "chroot /host grep -o -E '^(nouveau|nvidia) ' /proc/modules 2>&1" in text  # only the modules judged
    assert "chroot /host mokutil --sb-state 2>&1" in text
    # one short answer per path: the top folders, which exist before the install
    assert "chroot /host df -m --output=avail,target /var 2>&1" in text
    assert "chroot /host df -m --output=avail,target /run 2>&1" in text
    assert "chroot /host getent hosts archive.ubuntu.com" in text and "dl.rockylinux.org" in text
    assert "$(" not in text and "`" not in text
    for step in steps:
        assert shlex.split(shlex.join(step.argv)) == list(step.argv)


def test_a_clean_host_has_no_finding_in_any_mode() -> None:
    host = make()
    assert host.nouveau is False and host.secure_boot is False and host.headers is True and host.package_source
    for target in (UPSTREAM, PRECOMPILED):
        assert host_findings(target, host) == []
    assert codes(PREINSTALLED, host) == {"no-host-driver": Status.FAIL}


def test_nouveau_fix_is_the_blacklist_and_the_initramfs_tool_of_the_os() -> None:
    modules = (0, "nouveau ")
    tools = {
        "ubuntu": "update-initramfs -u",
        "rocky": "dracut --force",
        "sles": "dracut --force",
        "sl-micro": "transactional-update -c initrd",
    }
    for os_id, tool in tools.items():
        (finding,) = host_findings(UPSTREAM, make(os_id, modules=modules, **{"resolve:updates.suse.com": (0, "x")}))
        assert finding.check == "nouveau-loaded" and finding.status is Status.FAIL
        assert "blacklist nouveau" in finding.hint and tool in finding.hint, os_id


def test_secure_boot_fails_upstream_warns_precompiled_off_ubuntu_and_reads_efi_without_mokutil() -> None:
    on = make(mokutil=(0, "SecureBoot enabled"))
    assert codes(UPSTREAM, on) == {"secure-boot-unsigned": Status.FAIL}
    assert "mode: precompiled" in host_findings(UPSTREAM, on)[0].hint  # Ubuntu: Canonical-signed precompiled
    assert codes(PRECOMPILED, on) == {}
    rocky = make("rocky", mokutil=(0, "SecureBoot enabled"), **{"resolve:dl.rockylinux.org": (0, "x")})
    assert codes(PRECOMPILED, rocky) == {"secure-boot-precompiled": Status.WARN}
    efi = make(mokutil=(127, "sh: mokutil: not found"), **{"efi-secure-boot": (0, "   6   0   0   0   1")})
    assert efi.secure_boot is True
    unknown = make(mokutil=(127, "not found"), **{"efi-secure-boot": (127, "not found")})
    assert codes(UPSTREAM, unknown) == {"secure-boot": Status.SKIP}  # could not run: never a pass


def test_host_driver_against_the_mode() -> None:
    smi = {"host-nvidia-smi": (0, "580.126.20\n580.126.20"), "nvidia-version": (0, "580.126.20")}
    loaded = make(
        **smi,
        dkms=(0, f"nvidia/580.126.20, {KERNEL}, x86_64: installed"),
        modinfo=(0, f"/lib/modules/{KERNEL}/updates/dkms/nvidia.ko"),
    )
    assert loaded.host_driver == "580.126.20" and loaded.nvidia_loaded
    (finding,) = host_findings(PRECOMPILED, loaded)
    assert (
        finding.check == "host-driver-loaded"
        and "mode: preinstalled" in finding.hint
        and "apt-get purge" in finding.hint
    )
    assert host_findings(PREINSTALLED, loaded) == []
    none = make(
        **{"host-nvidia-smi": (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")}
    )
    (missing,) = host_findings(PREINSTALLED, none)
    assert missing.check == "no-host-driver" and "exit 9" in missing.message


def test_preinstalled_branch_against_the_release_table_and_boot_loading() -> None:
    smi = {"host-nvidia-smi": (0, "570.195.03")}
    old = make(
        **smi,
        dkms=(0, f"nvidia/570.195.03, {KERNEL}, x86_64: installed"),
        modinfo=(0, f"/lib/modules/{KERNEL}/x/nvidia.ko"),
    )
    target = DoctorTarget(Mode.PREINSTALLED, release="v26.7.0")
    (finding,) = host_findings(target, old)
    assert finding.check == "driver-branch-unsupported"
    assert (
        "570" in finding.message
        and "610, 595, 580, 535" in finding.message
        and "nvidia-driver-595-server" in finding.hint
    )
    assert host_findings(DoctorTarget(Mode.PREINSTALLED, release="v25.10.1"), old) == []
    ok = {"host-nvidia-smi": (0, "580.126.20")}
    not_at_boot = make(**ok)  # no dkms entry, modinfo finds no module for the running kernel
    (boot,) = host_findings(PREINSTALLED, not_at_boot)
    assert boot.check == "driver-not-at-boot" and boot.status is Status.FAIL
    assert "reboot one GPU node now" in boot.hint  # the seed's reboot warning
    no_modinfo = make(**ok, modinfo=(127, "sh: modinfo: not found"))
    assert no_modinfo.module_in_tree is None
    assert codes(PREINSTALLED, no_modinfo) == {"driver-at-boot": Status.SKIP}  # could not tell: never a pass
    in_tree = make(**ok, modinfo=(0, f"/lib/modules/{KERNEL}/kernel/drivers/video/nvidia.ko"))
    assert codes(PREINSTALLED, in_tree) == {"driver-no-dkms": Status.WARN}


def test_every_known_release_line_has_a_branch_row_with_its_source() -> None:
    for line, bundle in KNOWN_RELEASES.items():
        assert "life-cycle-policy.rst" in rules(bundle).driverBranches.source  # where the Component Matrix lives
        branches, default = supported_branches(bundle)
        assert branches and default.split(".")[0] in branches, line


def test_upstream_package_source_airgapped_and_repoconfig() -> None:
    offline = make(headers=(0, ""), **{"resolve:archive.ubuntu.com": (2, "")})
    assert offline.package_source is False and offline.headers is False
    (finding,) = host_findings(UPSTREAM, offline)
    assert finding.check == "no-package-source" and "headers not installed" in finding.message
    assert "kubectl create configmap repo-config -n gpu-operator" in finding.hint
    assert host_findings(DoctorTarget(Mode.UPSTREAM, repo_config="repo-config"), offline) == []
    assert host_findings(PRECOMPILED, offline) == []  # precompiled images need no headers
    flagged = host_findings(DoctorTarget(Mode.UPSTREAM, airgapped=True), make())
    assert [c.check for c in flagged] == ["no-package-source"] and "air-gapped" in flagged[0].message
    plan = Plan.model_validate(
        {
            "mode": "upstream",
            "driver": {
                "version": "580.126.20",
                "repository": "registry.example.com/nvidia",
                "airgapped": True,
                "repoConfig": {"configMapName": "r"},
            },
        }
    )
    assert DoctorTarget.from_plan(plan).repo_config == "r"


def test_free_space_below_the_need() -> None:
    df = {"df:/var": (0, " Avail Mounted on\n 1000 /var"), "df:/usr": (0, " Avail Mounted on\n 8900 /usr")}
    (finding,) = host_findings(UPSTREAM, make(**df))
    assert finding.check == "low-free-space" and "/var has 1000 MiB free" in finding.message


def test_a_cut_or_failed_answer_is_said_as_not_checked_never_read_as_a_pass() -> None:
    # the probe kept only the head of the module list: whatever it holds, nouveau is not known
    cut = make(modules=(0, "nvidia "), cut={"modules": "144 of 900 bytes"})
    assert cut.nouveau is None and cut.nvidia_loaded is None
    assert codes(UPSTREAM, cut) == {"modules": Status.SKIP}
    (check,) = host_findings(UPSTREAM, cut)
    assert "cut to fit the probe's result (144 of 900 bytes)" in check.message
    # grep itself failed (no /proc/modules): not "no nouveau"
    assert codes(UPSTREAM, make(modules=(2, "grep: /proc/modules: No such file or directory"))) == {
        "modules": Status.SKIP
    }
    # a path df could not answer (or whose answer was cut) is not judged silently
    free = make(**{"df:/var": (1, "df: /var: No such file or directory")}, cut={"df:/usr": "10 of 300 bytes"})
    assert codes(UPSTREAM, free) == {"df:/var": Status.SKIP, "df:/usr": Status.SKIP}


def test_a_probe_that_could_not_run_is_skipped_not_passed() -> None:
    (check,) = host_findings(UPSTREAM, HostState("gpu-01", error="pod never started"))
    assert check.status is Status.SKIP and "pod never started" in check.message


def test_one_finding_on_four_thousand_nodes_is_one_group() -> None:
    modules = (0, "nouveau ")
    states = {f"gpu-{i:04d}": make(node=f"gpu-{i:04d}", modules=modules) for i in range(4000)}
    states["rhel-01"] = make("rhel", node="rhel-01", modules=modules, **{"resolve:cdn.redhat.com": (0, "x")})
    groups = group_findings(states_findings(UPSTREAM, states))
    assert [(g.check, len(g.nodes)) for g in groups] == [("nouveau-loaded", 4000), ("nouveau-loaded", 1)]
    assert groups[0].line().startswith("✗ nouveau-loaded on 4000 nodes (gpu-0000, gpu-0001, gpu-0002 and 3997 more)")
    assert groups[0].as_dict()["count"] == 4000


def test_node_output_never_reaches_a_message_raw() -> None:
    hostile = make(**{"host-nvidia-smi": (9, "\x1b]0;pwned\x07\x1b[2J failed\rmore"), "uname": (0, "5.15\x1b[31m")})
    assert hostile.kernel == ""  # not a kernel release: not used
    for check in host_findings(PREINSTALLED, hostile):
        assert "\x1b" not in check.message and "\r" not in check.message and "\x07" not in check.message
