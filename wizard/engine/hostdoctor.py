"""Host checks before apply (the node doctor): what to run on each GPU node's host and what it means.

The install failures the GPU Operator's users hit first are decided on the host, before any operand
runs: ``nouveau`` holding the GPUs, Secure Boot refusing an unsigned module, a host driver already
loaded (or missing in pre-installed mode), a pre-installed driver on a branch the target release does
not support or that will not load after a reboot, no package source for the kernel headers an
upstream install compiles against, and too little free space. :func:`host_steps` lists the commands
(plain argv, run through ``chroot`` on the host: no shell, nothing from the cluster inside them);
:func:`read_host` turns one node's results into a :class:`HostState`; :func:`host_findings` judges a
state against a :class:`DoctorTarget` (the plan's mode and release) and gives ``Check`` findings with
the cause and the fix command for the node's OS (texts in ``assets/doctor/``);
:func:`wizard.engine.grouping.group_findings` folds the same finding on many nodes into one group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from wizard.bundled import asset_text, parse_yaml
from wizard.engine.driver_version import branch_of
from wizard.engine.modes import Mode
from wizard.engine.nodescript import Step, StepResult
from wizard.engine.plan import DEFAULT_NAMESPACE, DEFAULT_RELEASE, DEFAULT_TOOLKIT_INSTALL_DIR, Plan
from wizard.engine.releases import bundle_of
from wizard.engine.releases import supported_branches as supported_branches  # re-exported: declared in releases
from wizard.engine.results import Check, Status
from wizard.engine.textsafe import printable

__all__ = [
    "ANSWER_FINDINGS",
    "LATER_FINDINGS",
    "MODE_FINDINGS",
    "REFUSALS",
    "DoctorTarget",
    "HostState",
    "blocks_apply",
    "host_findings",
    "host_steps",
    "read_host",
    "states_findings",
]

EFI_SECURE_BOOT = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
"""The UEFI global variable whose last byte is 1 when Secure Boot is on (read when mokutil is missing)."""
_VERSION_RE = re.compile(r"\b(\d{3})\.\d{1,3}(?:\.\d{1,3})?\b", re.ASCII)
_KERNEL_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]{0,127}\Z", re.ASCII)
MODULES_STEP = ("grep", "-o", "-E", "^(nouveau|nvidia) ", "/proc/modules")
"""The loaded modules the checks need, and only those: ``/proc/modules`` (what ``lsmod`` reads) lists the newest
first, so on a Kubernetes node the kubelet's and the CNI's modules come before a ``nouveau`` loaded at boot; the
whole list would not fit the probe's per-step bytes. ``grep -o`` prints just the names found (``nouveau ``,
``nvidia ``), exit 1 when neither is loaded."""
VERSION_STEP = ("grep", "-o", "-m", "1", "-E", r"[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?", "/proc/driver/nvidia/version")
"""The loaded driver's version and nothing else: the file's first line names it among ~130 bytes of build details."""


#: Host failures that do not stop this install's rollout (the host driver works now): said everywhere, but they
#: hold no apply: a pre-installed driver that will not load after a reboot, a branch the release does not support.
LATER_FINDINGS = frozenset({"driver-not-at-boot", "driver-branch-unsupported"})


#: Host failures whose fix is the choice of mode (Secure Boot refuses upstream's unsigned build: precompiled's
#: signed images or a signed host driver load; a loaded host driver refuses a containerized one: pre-installed keeps
#: it; pre-installed over a host without one: install it, or a containerized mode): they hold no step before Mode,
#: only a plan whose mode they refuse.
MODE_FINDINGS = frozenset({"secure-boot-unsigned", "host-driver-loaded", "no-host-driver"})

#: The mode findings that refuse a mode as it is: Mode puts no ★ there and marks it refused. ``no-host-driver`` is
#: not one: pre-installed recommended over some hosts with a driver names the hosts to install it on (its work to do).
REFUSALS = frozenset({"secure-boot-unsigned", "host-driver-loaded"})

#: Host failures that no work on the node fixes, only the plan's answers: no package source for upstream's kernel
#: headers is fixed by a ``driver.repoConfig`` ConfigMap (the Driver step) or a precompiled mode. Like the mode's,
#: they hold no step before the one where they are fixed, only a plan that still lacks the answer.
ANSWER_FINDINGS = frozenset({"no-package-source"})


def blocks_apply(check: str, status: Status) -> bool:
    """Whether a host finding holds the apply until fixed or overridden: a failure the rollout would meet."""
    return status is Status.FAIL and check not in LATER_FINDINGS


@cache
def doctor_asset(name: str) -> dict[str, Any]:
    """One YAML file of ``assets/doctor/`` (read once)."""
    data: dict[str, Any] = parse_yaml(asset_text("doctor", name))
    return data


@dataclass(frozen=True)
class DoctorTarget:
    """What the host checks judge against: the plan's mode and where it installs."""

    mode: Mode
    release: str = DEFAULT_RELEASE
    namespace: str = DEFAULT_NAMESPACE
    airgapped: bool = False
    repo_config: str = ""
    toolkit_dir: str = DEFAULT_TOOLKIT_INSTALL_DIR
    excluded: frozenset[str] = frozenset()
    """Nodes kept out of the driver rollout (``driver.excludeNodes``): no driver goes there, so no fix is offered."""
    precompiled_missing: tuple[str, ...] = ()
    """The precompiled tags the pull registry lacks for the GPU groups (listed before Mode); a Secure Boot fix
    that says "use precompiled" names them instead of a fix that cannot work yet."""
    precompiled_from: str = ""
    """The repository those tags were listed from (``nvcr.io/nvidia/driver``)."""

    @property
    def bundle(self) -> str:
        """The shipped release bundle of the target release line (chart defaults, the probe's image)."""
        return bundle_of(self.release) or DEFAULT_RELEASE

    @classmethod
    def from_plan(cls, plan: Plan) -> DoctorTarget:
        return cls(
            mode=plan.mode,
            release=plan.operator.version,
            namespace=plan.operator.namespace,
            airgapped=plan.driver.airgapped,
            repo_config=plan.driver.repoConfig.configMapName,
            toolkit_dir=plan.toolkit.installDir or DEFAULT_TOOLKIT_INSTALL_DIR,
            excluded=frozenset(plan.driver.excludeNodes) if plan.driver_enabled else frozenset(),
        )


def _free_space_paths(target: DoctorTarget) -> list[tuple[str, str, int]]:
    """(path df is asked about, what installs there, MiB needed): the top folder of each, which exists before install."""
    out = []
    for entry in doctor_asset("host-checks.yaml")["free_space"]:
        path = target.toolkit_dir if entry["path"] == "toolkit" else str(entry["path"])
        top = "/" + path.strip("/").split("/", 1)[0]
        out.append((top, str(entry["what"]), int(entry["need_mb"])))
    return out


def host_steps(target: DoctorTarget, os_ids: Iterable[str] = ()) -> list[Step]:
    """The commands run on every GPU node's host, in order; each is a fixed argv gpu-wizard owns.

    ``os_ids`` (the GPU nodes' os-release IDs) pick which distribution package hosts are resolved:
    the names come from ``assets/doctor/host-checks.yaml``, never from the node.
    """
    hosts = doctor_asset("host-checks.yaml")["package_hosts"]
    package_hosts = sorted({str(hosts[os_id]) for os_id in os_ids if os_id in hosts})
    steps = [
        Step("modules", MODULES_STEP, host=True),
        Step("nvidia-version", VERSION_STEP, host=True),
        Step("host-nvidia-smi", ("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"), host=True),
        Step("uname", ("uname", "-r"), host=True),
        Step("mokutil", ("mokutil", "--sb-state"), host=True),
        Step("efi-secure-boot", ("od", "-An", "-t", "u1", EFI_SECURE_BOOT), host=True),
        Step("dkms", ("dkms", "status"), host=True),
        Step("modinfo", ("modinfo", "-n", "nvidia"), host=True),
        Step(
            "headers",
            ("find", "-L", "/lib/modules", "-mindepth", "2", "-maxdepth", "2", "-name", "build", "-type", "d"),
            host=True,
        ),
    ]
    # One step per path, asking only for what is judged: each answer is two short lines, whatever the device name.
    steps += [
        Step(f"df:{path}", ("df", "-m", "--output=avail,target", path), host=True)
        for path in dict.fromkeys(p for p, _, _ in _free_space_paths(target))
    ]
    steps += [Step(f"resolve:{host}", ("getent", "hosts", host), host=True) for host in package_hosts]
    return steps


@dataclass(frozen=True)
class HostState:
    """What one GPU node's host showed. ``None`` in a field: that check gave no answer (said in ``unknown``)."""

    node: str
    os_id: str = ""
    kernel: str = ""
    error: str = ""
    """Why the host could not be checked at all ("" when it was)."""
    nouveau: bool | None = None
    nvidia_loaded: bool | None = None
    loaded_version: str = ""
    host_driver: str = ""
    """The version the host's own nvidia-smi reports ("" none works)."""
    host_smi_detail: str = ""
    secure_boot: bool | None = None
    dkms_registered: bool | None = None
    module_in_tree: bool | None = None
    headers: bool | None = None
    package_source: bool | None = None
    free_mb: dict[str, tuple[int, str]] = field(default_factory=dict)
    """df path -> (MiB available, mount point)."""
    unknown: dict[str, str] = field(default_factory=dict)
    """check -> why it gave no answer."""
    path_checks: tuple[Check, ...] = ()
    """The host folders' checks (writable, not noexec) when the same probe ran them (``gpu-wizard doctor``)."""


def _clean(text: str, limit: int = 120) -> str:
    """Node output for a one-line message: control characters escaped, cut."""
    line = printable(text.strip().splitlines()[0] if text.strip() else "")
    return line[:limit] + ("…" if len(line) > limit else "")


def _secure_boot(mok: StepResult | None, efi: StepResult | None) -> bool | None:
    if mok is not None and mok.exit_code is not None:
        text = mok.output.lower()
        if "secureboot enabled" in text:
            return True
        if "secureboot disabled" in text or "not supported" in text:
            return False
    if efi is not None and efi.exit_code == 0:
        numbers = efi.output.split()
        if numbers and numbers[-1].isdigit():
            return numbers[-1] == "1"
    if efi is not None and efi.exit_code not in (None, 127) and "No such file" in efi.output:
        return False  # no SecureBoot variable: legacy BIOS boot or EFI without Secure Boot
    return None


def _free_space(result: StepResult | None) -> tuple[int, str] | None:
    """``df -m --output=avail,target PATH``: (MiB available, mount point), or None when it gave no such answer."""
    if result is None or result.exit_code != 0:
        return None
    rows = [line.split(None, 1) for line in result.output.splitlines()[1:] if line.strip()]
    if len(rows) != 1 or len(rows[0]) != 2 or not rows[0][0].isdigit():
        return None
    return int(rows[0][0]), printable(rows[0][1].strip())


def read_host(
    node: str, os_id: str, steps: Sequence[Step], results: Sequence[StepResult], cut: Mapping[str, str] | None = None
) -> HostState:
    """One node's step results as a :class:`HostState` (the judging is :func:`host_findings`').

    ``cut``: check -> ``kept of total bytes`` of each step whose output the probe cut to fit its result. A cut
    answer is no answer: its check is said as not checked (``unknown``), never read from the kept head.
    """
    cut = cut or {}
    by = {step.check: result for step, result in zip(steps, results, strict=False) if step.check not in cut}
    unknown: dict[str, str] = {
        check: f"its output was cut to fit the probe's result ({detail})"
        for check, detail in cut.items()
        if any(step.check == check for step in steps)
    }

    def answered(check: str) -> StepResult | None:
        result = by.get(check)
        if result is None or result.exit_code is None:
            unknown.setdefault(check, "the step did not finish")
            return None
        return result

    listed = answered("modules")
    modules = {line.split()[0] for line in (listed.output if listed else "").splitlines() if line.split()}
    if listed is not None and listed.exit_code not in (0, 1):  # 1: neither module loaded; else grep failed
        unknown["modules"] = f"grep /proc/modules exit {listed.exit_code}: {_clean(listed.output) or 'no output'}"
        listed = None
    nouveau = "nouveau" in modules if listed is not None else None
    version_file = answered("nvidia-version")
    loaded_version = ""
    if version_file is not None and version_file.exit_code == 0:
        match = _VERSION_RE.search(version_file.output)
        loaded_version = match.group(0) if match else ""
    nvidia_loaded = ("nvidia" in modules or bool(loaded_version)) if listed is not None else None
    smi = answered("host-nvidia-smi")
    host_driver, smi_detail = "", ""
    if smi is not None:
        match = _VERSION_RE.search(smi.output)
        if smi.exit_code == 0 and match:
            host_driver = match.group(0)
        else:
            smi_detail = (
                "not installed"
                if smi.exit_code == 127
                else f"exit {smi.exit_code}: {_clean(smi.output) or 'no output'}"
            )
    uname = answered("uname")
    kernel = uname.output.strip() if uname is not None and uname.exit_code == 0 else ""
    kernel = kernel if _KERNEL_RE.match(kernel) else ""
    secure_boot = _secure_boot(by.get("mokutil"), by.get("efi-secure-boot"))
    if secure_boot is None:
        unknown["secure-boot"] = "neither mokutil nor the EFI SecureBoot variable answered"
    dkms = answered("dkms")
    dkms_registered: bool | None = None
    if dkms is not None and dkms.exit_code == 0:
        dkms_registered = any(
            line.startswith("nvidia") and (not kernel or kernel in line) and "installed" in line
            for line in dkms.output.splitlines()
        )
    elif dkms is not None:
        dkms_registered = False if dkms.exit_code == 127 else None  # no dkms on the host: nothing is registered
    modinfo = answered("modinfo")
    module_in_tree = (
        None
        if modinfo is None or modinfo.exit_code == 127  # no modinfo on the host: cannot tell
        else (modinfo.exit_code == 0 and "/lib/modules/" in modinfo.output)
    )
    find = answered("headers")
    headers = None
    if find is not None and find.exit_code in (0, 1) and kernel:
        headers = f"/lib/modules/{kernel}/build" in find.output.splitlines()
    host = doctor_asset("host-checks.yaml")["package_hosts"].get(os_id)
    resolve = by.get(f"resolve:{host}") if host else None
    package_source = None if resolve is None or resolve.exit_code is None else resolve.exit_code == 0
    free: dict[str, tuple[int, str]] = {}
    for step in steps:
        if step.check.startswith("df:"):
            path, result = step.check[3:], answered(step.check)
            space = _free_space(result)
            if space is not None:
                free[path] = space
            elif result is not None:
                unknown[step.check] = f"df gave no free space for {path} (exit {result.exit_code}): " + (
                    _clean(result.output) or "no output"
                )
    return HostState(
        node=node,
        os_id=os_id,
        kernel=kernel,
        nouveau=nouveau,
        nvidia_loaded=nvidia_loaded,
        loaded_version=loaded_version,
        host_driver=host_driver,
        host_smi_detail=smi_detail,
        secure_boot=secure_boot,
        dkms_registered=dkms_registered,
        module_in_tree=module_in_tree,
        headers=headers,
        package_source=package_source,
        free_mb=free,
        unknown=unknown,
    )


def os_family(os_id: str) -> str:
    """``ubuntu``, ``rhel``, ``sles``, ``slemicro`` or ``other``: which fix commands apply."""
    return str(doctor_asset("host-checks.yaml")["os_families"].get(os_id, "other"))


def _fix(code: str, os_id: str, **values: str) -> tuple[str, str]:
    """(cause, fix) of a finding for the node's OS, placeholders filled."""
    entry = doctor_asset("fixes.yaml")["findings"][code]
    fixes = entry["fix"]
    family = os_family(os_id)
    fix = fixes.get(family) or fixes["other"]
    return str(entry["cause"]).format(**values), str(fix).format(**values)


def _finding(code: str, status: Status, state: HostState, *, note: str = "", words: str = "", **values: str) -> Check:
    """A finding on one node; ``note`` is added to the fix (the reboot warning); ``words``: the entry of
    fixes.yaml to say it with, when not the code's own."""
    cause, fix = _fix(words or code, state.os_id, **values)
    hint = f"{fix}. {note}" if note else fix
    return Check(code, status, cause, node=state.node, hint=hint, data={"os_family": os_family(state.os_id)})


def host_findings(target: DoctorTarget, state: HostState) -> list[Check]:
    """The problems (and the checks that could not run, as SKIPPED) one host has for this target."""
    if state.node in target.excluded:
        return _excluded_findings(state)  # kept out of the driver rollout: nothing there for the driver to meet
    if state.error:
        return [Check("host-check", Status.SKIP, f"host not checked: {state.error}", node=state.node)]
    found: list[Check] = []
    containerized = target.mode is not Mode.PREINSTALLED
    if state.nouveau:
        found.append(_finding("nouveau-loaded", Status.FAIL, state))
    if state.secure_boot and target.mode is Mode.UPSTREAM:
        found.append(_secure_boot_finding(target, state))
    elif state.secure_boot and target.mode is Mode.PRECOMPILED and os_family(state.os_id) != "ubuntu":
        found.append(_finding("secure-boot-precompiled", Status.WARN, state))
    if containerized and state.host_driver:
        found.append(_finding("host-driver-loaded", Status.FAIL, state, version=state.host_driver))
    if not containerized:
        found += _preinstalled_findings(target, state)
    if target.mode is Mode.UPSTREAM:
        found += _package_source_findings(target, state)
    found += _space_findings(target, state)
    for check, why in state.unknown.items():
        if check in ("secure-boot",) and target.mode is Mode.PREINSTALLED:
            continue  # a working pre-installed driver already loaded: Secure Boot no longer matters
        found.append(Check(check, Status.SKIP, f"not checked on the host: {why}", node=state.node))
    return found


def _excluded_findings(state: HostState) -> list[Check]:
    """A node kept out of the driver rollout. No driver fix applies there; but the operator's other operands still
    run on it, and without a working host driver the validator in each waits for the operator's driver there,
    which never comes: the ClusterPolicy would never read ready (docs/gpu-operator-facts.md §4). An unanswered
    nvidia-smi claims nothing."""
    if state.error or state.host_driver or not state.host_smi_detail:
        return []
    return [_finding("excluded-no-host-driver", Status.FAIL, state, detail=state.host_smi_detail, node=state.node)]


def _secure_boot_finding(target: DoctorTarget, state: HostState) -> Check:
    """Secure Boot under upstream: the fix is precompiled's signed images, but on Ubuntu only once the pull
    registry holds them; while it lacks them, the fix names the exact tags to push first."""
    missing = target.precompiled_missing
    if missing and os_family(state.os_id) == "ubuntu":
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        where = target.precompiled_from or "the registry the nodes pull from"
        return _finding(
            "secure-boot-unsigned",
            Status.FAIL,
            state,
            words="secure-boot-unsigned-untagged",
            mode=target.mode.value,
            missing=shown,
            where=where,
        )
    return _finding("secure-boot-unsigned", Status.FAIL, state, mode=target.mode.value)


def _preinstalled_findings(target: DoctorTarget, state: HostState) -> list[Check]:
    supported, default = supported_branches(target.release)
    recommended = branch_of(default) or (supported or ["580"])[0]  # the release's default branch
    if not state.host_driver:
        detail = state.host_smi_detail or "no answer"
        return [_finding("no-host-driver", Status.FAIL, state, detail=detail, branch=recommended)]
    found = []
    branch = branch_of(state.host_driver)
    if supported and branch not in supported:
        found.append(
            _finding(
                "driver-branch-unsupported",
                Status.FAIL,
                state,
                version=state.host_driver,
                branch=branch,
                release=target.release,
                supported=", ".join(supported),
                recommended=recommended,
            )
        )
    reboot = str(doctor_asset("fixes.yaml")["reboot_warning"]).strip()
    kernel = state.kernel or "the running kernel"
    values = {"version": state.host_driver, "kernel": kernel, "branch": branch}
    if state.module_in_tree is False and not state.dkms_registered:
        found.append(_finding("driver-not-at-boot", Status.FAIL, state, note=reboot, **values))
    elif state.module_in_tree and state.dkms_registered is False:
        found.append(_finding("driver-no-dkms", Status.WARN, state, note=reboot, **values))
    elif state.module_in_tree is None and not state.dkms_registered:
        why = "whether the host driver loads at boot is not known: modinfo gave no answer and dkms lists no nvidia"
        found.append(Check("driver-at-boot", Status.SKIP, why, node=state.node, hint=reboot))
    return found


def _package_source_findings(target: DoctorTarget, state: HostState) -> list[Check]:
    if target.repo_config:
        return []  # the plan names the mirror; reference checks prove the ConfigMap exists
    if state.package_source and not target.airgapped:
        return []
    kernel = state.kernel or "the running kernel"
    headers = "present on the host" if state.headers else "not installed on the host"
    if target.airgapped:
        where = f"the plan says the nodes are air-gapped and sets no driver.repoConfig (headers {headers})"
    elif state.package_source is False:
        where = f"the node cannot resolve its distribution's package host and no driver.repoConfig names a mirror (headers {headers})"
    else:
        why = f"no known package host for OS {state.os_id or 'unknown'}" if state.package_source is None else ""
        return (
            [Check("package-source", Status.SKIP, f"package source not checked: {why}", node=state.node)] if why else []
        )
    values = {"kernel": kernel, "where": where, "namespace": target.namespace}
    # "use mode: precompiled" is no way out while the pull registry lacks this kernel's images: name them to push
    lacking = [tag for tag in target.precompiled_missing if state.kernel and f"-{state.kernel}-" in tag]
    if lacking:
        shown = ", ".join(lacking[:3]) + (f" and {len(lacking) - 3} more" if len(lacking) > 3 else "")
        registry = target.precompiled_from or "the registry the nodes pull from"
        words = "no-package-source-untagged"
        return [
            _finding("no-package-source", Status.FAIL, state, words=words, missing=shown, registry=registry, **values)
        ]
    return [_finding("no-package-source", Status.FAIL, state, **values)]


def _space_findings(target: DoctorTarget, state: HostState) -> list[Check]:
    found = []
    for path, what, need in _free_space_paths(target):
        if path not in state.free_mb:
            continue
        free, mount = state.free_mb[path]
        if free < need:
            found.append(
                _finding(
                    "low-free-space",
                    Status.FAIL,
                    state,
                    path=path,
                    free=str(free),
                    mount=mount,
                    what=what,
                    need=str(need),
                )
            )
    return found


def states_findings(target: DoctorTarget, states: Mapping[str, HostState]) -> list[Check]:
    """Every host's findings for a target."""
    return [check for state in states.values() for check in host_findings(target, state)]
