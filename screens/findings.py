"""Findings that travel with the plan: what a step found that may stop the driver from working.

A finding made on one step (an image missing in the registry, a path mounted noexec, a missing
pull Secret or repoConfig ConfigMap, GPU nodes on several OSes, the renderer's warnings) must not
be lost on the next: Preview's Warnings tab, the Apply confirmation, the Verify summary and the
exported report all list :func:`plan_findings`. The Nodes step's host check (the node doctor) adds its
findings here too, judged against the plan of the moment. A *blocking* finding (the driver cannot start as
planned) holds Next on the step that found it and on Preview until it is fixed or the user ticks the override;
an override covers the findings listed when it was ticked on its own step (:func:`overridden`), never another
step's nor one found later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wizard.engine.steps import DRIVER, MODE, NODES, PATHS, PREVIEW
from wizard.engine.textsafe import shell_command

if TYPE_CHECKING:
    from screens.state import WizardState
    from wizard.engine.grouping import FindingGroup
    from wizard.engine.hostdoctor import DoctorTarget
    from wizard.engine.hostfolders import HostPath
    from wizard.engine.results import Check


@dataclass(frozen=True)
class Finding:
    """One problem with the plan, where to fix it, and whether it blocks Apply."""

    message: str
    hint: str = ""
    """What to do about it (shown under the message everywhere)."""
    blocking: bool = False
    step: str = ""
    """The step that found it (and where it is fixed)."""

    def line(self) -> str:
        """``✗ message`` (blocking) or ``! message``."""
        return f"{'✗' if self.blocking else '!'} {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "hint": self.hint, "blocking": self.blocking, "step": self.step}


def _node_list(nodes: list[str], most: int = 3) -> str:
    shown = ", ".join(nodes[:most])
    return shown + (f" and {len(nodes) - most} more" if len(nodes) > most else "")


def unheld_sources(statuses: Iterable[Any]) -> dict[str, str]:
    """Target image -> why no source holds it, from the registry's answers (``ImageStatus``): the mirror plan
    copies none of these."""
    return {
        status.image: f"not in the target, and its source {status.source.reference} does not hold it either"
        for status in statuses
        if not status.ok and status.source is not None and not status.source.exists and not status.source.error
    }


def _image_findings(state: WizardState) -> list[Finding]:
    found: list[Finding] = []
    for status in state.images:
        target = status.target
        if target.error:
            found.append(
                Finding(  # a check that could not run is no proof the image is there (the CLI's apply refuses too)
                    f"{status.image}: registry unreachable, not checked ({target.error})",
                    "check the registry address and the network from here; if the nodes reach it, tick 'apply anyway'",
                    blocking=True,
                    step=DRIVER.name,
                )
            )
        elif not target.exists and status.components:
            source = status.source.reference if status.source is not None else ""
            copy = (
                shell_command(
                    ("skopeo", "copy", "--all", "--preserve-digests", f"docker://{source}", f"docker://{status.image}")
                )
                if source
                else ""
            )
            found.append(
                Finding(
                    f"{status.image} is missing in the target registry: the {', '.join(status.components)} pods "
                    "cannot pull it",
                    f"run the mirror plan (Preview's Mirror plan tab), or: {copy}"
                    if copy
                    else "push it into the registry",
                    blocking=True,
                    step=DRIVER.name,
                )
            )
        elif not target.exists:
            precompiled = state.rendered is not None and state.rendered.plan.precompiled
            if status.mirrorable:
                fix = "run the mirror plan (Driver step or Preview's Mirror plan tab), then Check again"
            elif precompiled:  # nowhere to copy it from: a mirror cannot help, a mode that builds for any kernel can
                from wizard.engine.facts import IMMUTABLE_OS_IDS

                nodes = [state.nodes[n] for n in status.nodes if n in state.nodes]
                fix = f"no source holds it: move these nodes to a kernel with an image (gpu-wizard check-kernel {status.kernel})"
                if not any(n.os_id in IMMUTABLE_OS_IDS for n in nodes):  # an immutable OS cannot build a driver
                    fix = f"{fix}, or choose Upstream on the Mode step: it builds the driver for kernel {status.kernel}"
            else:
                fix = "choose a version published for this OS, or mirror the image into the registry"
            found.append(
                Finding(
                    f"{status.image} is missing in the target registry: {len(status.nodes)} node(s) cannot pull it",
                    fix,
                    blocking=True,
                    step=DRIVER.name,
                )
            )
    rendered = state.rendered
    if rendered is not None and rendered.plan.precompiled:
        from wizard.engine.catalog import tuple_status

        present = {s.image for s in state.images if s.target.exists}
        seen: set[str] = set()
        for entry in rendered.node_images:
            if not entry.image or entry.image in seen or entry.image in present:
                continue
            seen.add(entry.image)
            if tuple_status(rendered.plan.driver.version, entry.kernel, entry.tag_os) == "unknown":
                found.append(
                    Finding(
                        f"no published precompiled driver {rendered.plan.driver.version} for kernel {entry.kernel} "
                        f"({entry.tag_os}): its nodes may get no driver",
                        "see the support request on the Driver step; `gpu-wizard check-kernel "
                        f"{entry.kernel}` prints it, and for Ubuntu the recipe to build the image",
                        step=DRIVER.name,
                    )
                )
    return found


def answer_folders(state: WizardState) -> list[HostPath]:
    """The host folders the plan would install into: the valid plan's, else those of the answers given so far with the
    wizard's defaults for the rest (:func:`wizard.engine.defaults.default_answers`, the one source ``answers init``
    writes from: the recommended mode, the OS profile's toolkit folder); [] without GPU nodes or with a path the plan
    refuses (Paths says why)."""
    from wizard.engine.defaults import default_answers
    from wizard.engine.hostfolders import folders, plan_folders
    from wizard.engine.plan import DEFAULT_RELEASE, check_absolute_path

    facts = state.facts
    if facts is None or not facts.gpu_nodes:
        return []
    plan = state.plan()
    if plan is not None:
        return plan_folders(plan, facts)
    release = state.get("operator.version") or getattr(state.preflight, "operator_release", "") or DEFAULT_RELEASE
    defaults = default_answers(facts, release=str(release), host_drivers=state.host_drivers)
    mode = str(state.get("mode") or defaults["mode"])
    toolkit = str(state.get("toolkit.installDir") or defaults["toolkit"]["installDir"])
    driver = state.get("hostPaths.driverInstallDir")
    try:
        for path in (toolkit, *([str(driver)] if driver else [])):
            check_absolute_path(path)
    except ValueError:
        return []
    return folders(
        driver_enabled=mode != "preinstalled", toolkit_dir=toolkit, driver_dir=str(driver) if driver else None
    )


def nodes_folder_checks(state: WizardState) -> list[Check] | None:
    """The Nodes step's host check's answers for the current answers' host folders (it probes the folders of the
    answers so far and the wizard's defaults with the hosts), or None when it did not check each of them as they are
    now (another folder typed on Paths, another mode): then Paths probes them itself."""
    from wizard.engine.hostfolders import covered

    if not state.host_folders or not state.host_states:
        return None
    wanted = answer_folders(state)
    if not wanted or not covered(wanted, state.host_folders):
        return None
    names = {folder.check for folder in wanted}
    return [check for host in state.host_states.values() for check in host.path_checks if check.check in names]


def folder_checks(state: WizardState) -> tuple[list[Check] | None, str]:
    """The checks of the current host folders and the step that found them: Paths' own, or the Nodes step's host
    check's for the same folders (one finding, said and overridden on Nodes); (None, "") when neither checked them."""
    if state.path_checks is not None:
        return state.path_checks, state.path_checks_from or PATHS.name
    found = nodes_folder_checks(state)
    return (found, NODES.name) if found is not None else (None, "")


def _path_findings(state: WizardState) -> list[Finding]:
    """Failed node-side path checks, one finding per distinct problem (a thousand nodes read as one)."""
    checks, step = folder_checks(state)
    if checks is None and state.cluster is not None and state.facts is not None:
        return [
            Finding(
                "the host paths were not checked on the nodes (noexec or read-only mounts would stop the driver)",
                "press Check on nodes on the Paths step",
                step=PATHS.name,
            )
        ]
    problems: dict[tuple[str, str, str], list[str]] = {}
    for check in checks or []:
        if check.node and not check.ok:
            message = str(check.message).replace(check.node, "").strip(" :")
            problems.setdefault((check.check, message, check.hint), []).append(check.node)
    return [
        Finding(f"{name} on {_node_list(sorted(nodes))}: {message}", hint, blocking=True, step=step)
        for (name, message, hint), nodes in problems.items()
    ]


def _mixed_os_finding(state: WizardState) -> list[Finding]:
    plan, facts = state.plan(), state.facts
    if plan is None or facts is None or not plan.driver_enabled or plan.driver.useNvidiaDriverCRD:
        return []
    tags = facts.os_tags(plan.operator.version)
    if len(tags) < 2:
        return []
    return [
        Finding(
            f"GPU nodes run {len(tags)} OSes ({', '.join(tags)}) but the NVIDIADriver CRD is off",
            "tick NVIDIADriver CRD on the Driver step: one driver resource per OS, each with its own image",
            step=DRIVER.name,
        )
    ]


def _downgrade_finding(state: WizardState) -> list[Finding]:
    """The plan moves the live driver back to an older version: a warning wherever the plan's warnings are shown."""
    from wizard.engine.branches import branch_checks

    plan = state.plan()
    live = ((getattr(state.preflight, "cluster_policy", None) or {}).get("spec") or {}).get("driver") or {}
    if plan is None or not live.get("version"):
        return []
    checks = branch_checks(plan, live_version=str(live["version"]))
    return [Finding(c.message, c.hint, step=DRIVER.name) for c in checks if c.check == "driver-downgrade"]


def _registry_branch_message(state: WizardState, message: str) -> str:
    """The renderer's unsupported-branch warning with its examples from the registry's versions (the renderer
    knows only the release's matrix, whose versions the registry may not hold)."""
    from wizard.engine.branches import branch_checks

    plan = state.plan()
    if plan is None:
        return message
    checks = [
        c for c in branch_checks(plan, available=state.registry_versions) if c.check == "driver-branch-unsupported"
    ]
    return f"The {checks[0].message}: {checks[0].hint}." if checks else message


def doctor_target(state: WizardState) -> DoctorTarget:
    """What the host checks judge against: the plan when it is valid, else the chosen (or recommended) mode."""
    from wizard.engine.hostdoctor import DoctorTarget
    from wizard.engine.modes import Mode
    from wizard.engine.naming import image_repository
    from wizard.engine.plan import DEFAULT_RELEASE, DEFAULT_TOOLKIT_INSTALL_DIR

    plan = state.plan()
    if plan is not None:
        listed = image_repository(plan.driver.repository or plan.driver.source, plan.driver.image)
        return _registry_lacks(state, DoctorTarget.from_plan(plan), listed)
    facts = state.facts
    mode = state.get("mode") or (facts.recommend_mode(state.host_drivers).value if facts is not None else "")
    release = state.get("operator.version") or getattr(state.preflight, "operator_release", "") or DEFAULT_RELEASE
    toolkit = state.get("toolkit.installDir") or (
        facts.recommend_toolkit_dir().value if facts is not None else DEFAULT_TOOLKIT_INSTALL_DIR
    )
    excluded = frozenset(str(name) for name in state.get("driver.excludeNodes") or [])  # kept out of the rollout
    try:
        chosen = Mode(mode or Mode.PRECOMPILED.value)
    except ValueError:
        chosen = Mode.PRECOMPILED
    excluded = excluded if chosen is not Mode.PREINSTALLED else frozenset()
    target = DoctorTarget(chosen, release=str(release), toolkit_dir=str(toolkit), excluded=excluded)
    return _registry_lacks(state, target, state.precompiled_from)


def _registry_lacks(state: WizardState, target: DoctorTarget, repository: str) -> DoctorTarget:
    """The target with the precompiled tags the pull registry lacks (listed before Mode), when the plan pulls from
    the repository they were listed from: a Secure Boot fix then names them instead of a fix that cannot work."""
    import dataclasses

    facts = state.facts
    if state.precompiled_tags is None or facts is None or repository != state.precompiled_from:
        return target
    missing = tuple(facts.precompiled_missing(state.precompiled_tags, target.release))
    return dataclasses.replace(target, precompiled_missing=missing, precompiled_from=state.precompiled_from)


def host_groups(state: WizardState) -> list[FindingGroup]:
    """The Nodes step's host check judged against the current plan: one group per finding, its nodes named."""
    if not state.host_states:
        return []
    from wizard.engine.grouping import group_findings
    from wizard.engine.hostdoctor import states_findings

    return group_findings(states_findings(doctor_target(state), state.host_states))


def prior_findings(state: WizardState) -> dict[str, tuple[Check, ...]]:
    """The blocking host findings known before apply (the Nodes step's host check judged against the current plan,
    and Paths' noexec or read-only folders), per node: what the Apply step hands the rollout follower, so a pod
    failing on such a node ends the rollout at once with its finding (:mod:`wizard.engine.prior_findings`)."""
    from wizard.engine.hostdoctor import states_findings
    from wizard.engine.prior_findings import by_node

    host = states_findings(doctor_target(state), state.host_states) if state.host_states else []
    folders = folder_checks(state)[0] or []
    return by_node([*host, *(c for c in folders if c.node and not c.ok)])


def mode_refusals(state: WizardState, mode: str) -> list[FindingGroup]:
    """The host failures whose fix is the mode that refuse ``mode`` as it is (Secure Boot refuses upstream's
    unsigned build, a loaded host driver a containerized one): judged against the plan of the moment with its mode replaced, so Mode can tell each choice."""
    if not state.host_states:
        return []
    import dataclasses

    from wizard.engine.grouping import group_findings
    from wizard.engine.hostdoctor import REFUSALS, states_findings
    from wizard.engine.modes import Mode

    try:
        chosen = Mode(mode)
    except ValueError:
        return []
    target = dataclasses.replace(doctor_target(state), mode=chosen)
    groups = group_findings(states_findings(target, state.host_states))
    return [g for g in groups if g.check in REFUSALS and g.status.value == "fail"]


def _host_findings(state: WizardState) -> list[Finding]:
    """Host problems (nouveau, Secure Boot, a host driver vs the mode…): a failure the rollout would meet blocks;
    a warning, or a failure of later (no boot-time load, an unsupported branch that runs now), does not. A finding
    whose fix is the mode (Secure Boot under upstream) is the Mode step's: it holds no Nodes, only Preview while the
    chosen mode is one it refuses; one whose fix is an answer (no package source: driver.repoConfig) is the Driver
    step's, likewise."""
    from wizard.engine.hostdoctor import ANSWER_FINDINGS, MODE_FINDINGS, blocks_apply

    def step_of(check: str) -> str:
        if check in MODE_FINDINGS:
            return MODE.name
        return DRIVER.name if check in ANSWER_FINDINGS else NODES.name  # repoConfig is set on Driver

    return [
        Finding(
            group.summary(),
            group.hint,
            blocking=blocks_apply(group.check, group.status),
            step=step_of(group.check),
        )
        for group in host_groups(state)
        if group.status.value in ("fail", "warn")
    ]


def plan_findings(state: WizardState) -> list[Finding]:
    """Every finding about the current plan, blocking ones first."""
    from wizard.engine.gitops import BLOCKING_ADVICE  # declared once: the bundle refuses on the same advice

    found: list[Finding] = []
    rendered = state.rendered
    mixed_os = _mixed_os_finding(state)  # the renderer's mixed-os warning says the same: shown once, with the fix here
    for advice in getattr(rendered, "advice", []):
        if advice.code == "tuple-unpublished":
            continue  # said per image by _image_findings, with the registry's answer
        if advice.level == "warning" and not (mixed_os and advice.code == "mixed-os"):
            message = advice.message
            if advice.code == "driver-branch-unsupported" and state.registry_versions is not None:
                message = _registry_branch_message(state, message)
            found.append(Finding(message, advice.reason, advice.code in BLOCKING_ADVICE, PREVIEW.name))
    for check in state.references:
        if not check.ok or check.status.value == "warn":
            found.append(Finding(check.message, check.hint, not check.ok, DRIVER.name))
    found += _image_findings(state)
    found += _path_findings(state)
    found += mixed_os
    found += _downgrade_finding(state)
    found += _host_findings(state)
    return sorted(found, key=lambda f: not f.blocking)


def overridden(state: WizardState, finding: Finding) -> bool:
    """The user went on despite this very finding: by the override of the step that found it, or Preview's
    "apply anyway" ticked while it was listed (a finding found later is covered by neither)."""
    return finding.message in state.overrides.get(finding.step, ()) or finding.message in state.overrides.get(
        PREVIEW.name, ()
    )


def standing(state: WizardState, step: str = "") -> list[Finding]:
    """The blocking findings no override covers (only ``step``'s when given)."""
    return [f for f in plan_findings(state) if f.blocking and (not step or f.step == step) and not overridden(state, f)]


def override_scope(state: WizardState, step: str) -> frozenset[str]:
    """What ticking ``step``'s override covers: its own blocking findings (Preview's: every one listed now that
    the step which found it has not overridden already)."""
    covered: set[str] = set()
    for f in plan_findings(state):
        if not f.blocking:
            continue
        if f.step == step or (step == PREVIEW.name and f.message not in state.overrides.get(f.step, ())):
            covered.add(f.message)
    return frozenset(covered)


def override_ticked(state: WizardState, step: str) -> bool:
    """``step``'s override box shows ticked: given, and covering every blocking finding of its scope listed now."""
    given = state.overrides.get(step)
    return given is not None and override_scope(state, step) <= given


def blocking_reason(state: WizardState) -> str:
    """Why Apply should not go ahead ("" when nothing blocks or the user overrode each blocking finding)."""
    blocking = standing(state)
    if not blocking:
        return ""
    count = f"{len(blocking)} blocking findings" if len(blocking) > 1 else "1 blocking finding"
    return f"{count}: fix or tick 'apply anyway'"
