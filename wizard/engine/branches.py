"""Does the operator release support the plan's driver branch, and is the change a downgrade?

The branches each release line supports are its ``release.yaml``'s ``driverBranches`` (the GPU Operator
component matrix, :mod:`wizard.engine.releases`), for every mode: a containerized driver of an unsupported branch is as unsupported
as a host driver of one (:func:`wizard.engine.releases.supported_branches`). A supported version to
suggest comes from the catalog for the nodes' OS in precompiled mode, else from the matrix's list.
"""

from __future__ import annotations

from collections.abc import Sequence

from wizard.engine.defaults import catalog_versions
from wizard.engine.driver_version import DriverVersion, branch_of
from wizard.engine.modes import Mode
from wizard.engine.plan import Plan
from wizard.engine.releases import rules_of_line, supported_branches  # not hostdoctor's: render loads no host doctor
from wizard.engine.results import Check, Status

__all__ = ["branch_checks", "is_downgrade", "supported_versions"]


def is_downgrade(live: str, planned: str) -> bool:
    """``planned`` is older than ``live`` (580 → 570; 580.126.20 → 580.105.08); a bare branch of the same
    branch (580 beside 580.126.20) is no downgrade. Digests, and any text that is no driver version, are never
    compared."""
    old, new = DriverVersion.parse_or_none(live), DriverVersion.parse_or_none(planned)
    if old is None or new is None:
        return False
    if old.branch_number != new.branch_number:
        return new.branch_number < old.branch_number
    if old.is_branch or new.is_branch:
        return False
    return new < old


def supported_versions(release: str, mode: Mode, tag_oses: Sequence[str] = ()) -> list[str]:
    """Versions of the supported branches to suggest: the catalog's on the nodes' OS (precompiled), else the matrix's."""
    supported, _ = supported_branches(release)
    if mode is Mode.PRECOMPILED and tag_oses:
        fitting = [v for v in catalog_versions(tag_oses) if branch_of(v) in supported]
        if fitting:
            return fitting
        return list(supported)  # precompiled images are tagged per branch: the branch itself is a version
    rules = rules_of_line(release)
    versions = rules.driverBranches.versions if rules is not None else ()
    return [v for v in versions if branch_of(v) in supported]


def branch_checks(
    plan: Plan, *, live_version: str = "", tag_oses: Sequence[str] = (), available: Sequence[str] | None = None
) -> list[Check]:
    """A warning when the plan's driver branch is not one its operator release supports; a notice when the
    plan moves the live driver back (``live_version`` → ``driver.version``). Nothing for pre-installed or a digest.

    ``available``: the versions the registry (or the source) holds, newest first, once read: the examples of
    a supported version come only from them (a suggestion the registry cannot serve sends the user guessing)."""
    version, parsed = plan.driver.version, plan.driver.driver_version
    if not plan.driver_enabled or parsed is None:  # no version, or a digest
        return []
    release = plan.operator.version
    found: list[Check] = []
    supported, default = supported_branches(release)
    branch = parsed.branch
    if supported and branch not in supported:
        if available is None:
            examples = ", ".join(supported_versions(release, plan.mode, tag_oses)[:3])
        else:  # the release's own branch first, then the newest
            fitting = [v for v in available if branch_of(v) in supported]
            fitting.sort(key=lambda v: branch_of(v) != branch_of(default))
            examples = ", ".join(fitting[:3])
        found.append(
            Check(
                "driver-branch-unsupported",
                Status.WARN,
                f"driver {version} is on branch {branch}, which operator {release} does not support "
                f"(supported branches: {', '.join(supported)})",
                hint=(
                    f"choose a version of a supported branch ({examples}), or an operator release that supports {branch}"
                    if examples
                    else f"the registry holds no version of a supported branch: mirror one, or choose an operator "
                    f"release that supports {branch}"
                ),
                data={
                    "branch": branch,
                    "supported": supported,
                    "short": f"branch {branch} unsupported by operator {release} ({', '.join(supported)})"
                    + (f": e.g. {examples.split(', ')[0]}" if examples else ""),
                },
            )
        )
    if is_downgrade(live_version, version):
        found.append(
            Check(
                "driver-downgrade",
                Status.WARN,
                f"driver {live_version} → {version} is a downgrade"
                + (f" (branch {branch_of(live_version)} → {branch})" if branch_of(live_version) != branch else ""),
                hint="intended? every GPU node's driver restarts on the older version; keep the live one to stay current",
                data={"live": live_version, "short": f"{live_version} → {version} is a downgrade of the live driver"},
            )
        )
    return found
