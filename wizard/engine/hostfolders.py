"""The host folders a plan puts operand files in, and what each must allow: one rule for every check of them.

The toolkit copies ``nvidia-container-runtime`` into ``toolkit.installDir`` and containerd executes it from there;
the containerized driver exposes its root at ``/run/nvidia/driver``, from which the validator and the toolkit run
``nvidia-smi``. :func:`plan_folders` names those folders for a plan on these nodes; the cluster room's
:mod:`wizard.cluster.hostchecks.pathcheck` probes them (Paths, ``gpu-wizard apply``'s host gate, ``doctor``), and the TUI's
Nodes step probes the folders of the wizard's default answers with its host check, so Paths reuses that answer
when its folders are among them (:func:`covered`) instead of probing the same folders twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wizard.engine.facts import ClusterFacts
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, Plan

__all__ = ["HostPath", "covered", "folders", "host_paths", "plan_folders"]


@dataclass(frozen=True)
class HostPath:
    """One host folder the plan puts operand files in, and what it must allow."""

    check: str
    """The check's name: ``toolkit-dir`` or ``driver-dir``."""
    field: str
    """The answers field that sets it."""
    path: str
    runs: str
    """What must execute from there (the reason noexec fails)."""
    must_exist: bool = False
    """Pre-installed driver root: the host driver is there already, nothing creates it."""
    writable: bool = True
    """An operand creates or writes files there."""


def host_paths(plan: Plan, toolkit_dir: str) -> list[HostPath]:
    """The folders to check for ``plan`` (``toolkit_dir``: the installDir the toolkit will get)."""
    return folders(
        driver_enabled=plan.driver_enabled, toolkit_dir=toolkit_dir, driver_dir=plan.hostPaths.driverInstallDir
    )


def folders(*, driver_enabled: bool, toolkit_dir: str, driver_dir: str | None) -> list[HostPath]:
    """The folders of a plan that installs the driver (``driver_enabled``) or not, with these two answers (also
    before the answers make a valid plan: the Nodes step's host check takes the defaults' folders)."""
    paths = [HostPath("toolkit-dir", "toolkit.installDir", toolkit_dir, "the toolkit's nvidia-container-runtime")]
    if driver_enabled:
        paths.append(
            HostPath(
                "driver-dir",
                "hostPaths.driverInstallDir",
                driver_dir or DEFAULT_DRIVER_INSTALL_DIR,
                "the containerized driver's nvidia-smi and libraries",
            )
        )
    elif driver_dir:
        paths.append(
            HostPath(
                "driver-dir",
                "hostPaths.driverInstallDir",
                driver_dir,
                "the host driver's nvidia-smi",
                must_exist=True,
                writable=False,
            )
        )
    return paths


def plan_folders(plan: Plan, facts: ClusterFacts, toolkit_install_dir: str | None = None) -> list[HostPath]:
    """The folders ``plan`` installs into on these nodes: the toolkit's is ``toolkit_install_dir``, else the plan's,
    else the OS profile's default (what the rendered ClusterPolicy will say)."""
    toolkit_dir = toolkit_install_dir or plan.toolkit.installDir or facts.recommend_toolkit_dir().value
    return host_paths(plan, toolkit_dir)


def covered(wanted: Iterable[HostPath], checked: Iterable[HostPath]) -> bool:
    """Every folder of ``wanted`` was checked as ``checked`` checked it (same path, same demands)."""
    return set(wanted) <= set(checked)
