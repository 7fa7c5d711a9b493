"""The plan a cluster already runs, read back from its live ClusterPolicy (and default NVIDIADriver).

Used when verifying without an answers file, and to start an upgrade from what runs: the driver
mode, image fields, toolkit and host paths are taken from the live objects and validated through
:class:`wizard.engine.plan.Plan` like any other answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from wizard.cluster.errors import ClusterError
from wizard.engine.naming import Release
from wizard.engine.operand_images import live_operand_registry
from wizard.engine.plan import DEFAULT_RELEASE, Plan
from wizard.engine.releases import bundle_of


def known_release(text: str) -> str:
    """An operator image tag as a release (``vMAJOR.MINOR.PATCH``) when gpu-wizard knows its line, else the default."""
    try:
        release = Release.parse(text)
    except ValueError:
        return DEFAULT_RELEASE
    return str(release) if bundle_of(release) else DEFAULT_RELEASE


def _default_driver(drivers: list[dict[str, Any]]) -> Mapping[str, Any]:
    for cr in drivers:
        if (cr.get("spec") or {}).get("default") is True or cr["metadata"]["name"] == "default":
            return cr.get("spec") or {}
    return (drivers[0].get("spec") or {}) if drivers else {}


def plan_from_live(
    policy: Mapping[str, Any] | None, drivers: list[dict[str, Any]], *, release: str, namespace: str
) -> Plan:
    """The plan the live objects express; ClusterError when there is none or it is not valid."""
    if policy is None:
        raise ClusterError(
            "no ClusterPolicy in the cluster to verify against", "pass --answers FILE, or apply a plan first"
        )
    spec = policy.get("spec") or {}
    driver = dict(spec.get("driver") or {})
    crd = bool(driver.get("useNvidiaDriverCRD"))
    source = _default_driver(drivers) if crd else driver
    enabled = driver.get("enabled", True) is not False
    mode = "preinstalled" if not enabled else ("precompiled" if source.get("usePrecompiled") else "upstream")
    answers: dict[str, Any] = {
        "version": 1,
        "operator": {"version": known_release(release), "namespace": namespace},
        "mode": mode,
        "driver": {"useNvidiaDriverCRD": crd},
    }
    if enabled:
        for key in ("repository", "image", "version"):
            if source.get(key):
                answers["driver"][key] = str(source[key])
        if source.get("repository"):  # its images are where it pulls them: nothing to copy (not another OS's source)
            answers["driver"]["source"] = str(source["repository"])
        secrets = source.get("imagePullSecrets") or []
        answers["driver"]["imagePullSecrets"] = [s if isinstance(s, str) else s.get("name", "") for s in secrets]
    toolkit_dir = (spec.get("toolkit") or {}).get("installDir")
    if toolkit_dir:
        answers["toolkit"] = {"installDir": toolkit_dir}
    registry = live_operand_registry(spec, answers["operator"]["version"])
    if registry:  # the operands come from a private registry: a plan read back keeps them there
        answers.setdefault("driver", {})["operandRegistry"] = registry
    driver_dir = (spec.get("hostPaths") or {}).get("driverInstallDir")
    if driver_dir and driver_dir != "/run/nvidia/driver":
        answers["hostPaths"] = {"driverInstallDir": driver_dir}
    try:
        return Plan.model_validate(answers)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "driver"
        raise ClusterError(
            f"the live ClusterPolicy {policy['metadata']['name']} does not form a valid plan ({where}: {first['msg']})",
            "pass --answers FILE with the plan to verify against",
        ) from None
