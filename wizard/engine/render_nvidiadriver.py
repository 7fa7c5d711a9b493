"""The NVIDIADriver custom resources the wizard renders, as the chart's ``templates/nvidiadriver.yaml`` writes them.

Every CR shares one ``spec``: the plan's image fields and upgrade policy over the chart's driver
values, in the template's order, reduced to the fields the release's CRD knows. The CRs split by OS
only where OS pools need different settings (repoConfig, mounted only for the distributions the
operator knows); :func:`nvidia_drivers` says how. The ClusterPolicy beside them and the Helm values
are :mod:`wizard.engine.render_policy`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from wizard.bundled import operator_values
from wizard.engine.facts import LABEL_OS_ID, ClusterFacts
from wizard.engine.naming import repo_config_dirs
from wizard.engine.operand_images import private_repository
from wizard.engine.plan import Mode, Plan
from wizard.engine.render_policy import DEFAULT_NVIDIADRIVER_NAME, is_empty, spec_schema, template_upgrade_policy

_OPERAND_KEYS = ("repository", "image", "version", "imagePullPolicy", "imagePullSecrets", "env", "args")


def _operand(values: Mapping[str, Any]) -> dict[str, Any]:
    """A ``gds``/``gdrcopy`` section as the template writes it: ``enabled`` and the image fields that are set."""
    out: dict[str, Any] = {"enabled": bool(values.get("enabled"))}
    for key in _OPERAND_KEYS:
        if values.get(key) or key == "version":
            out[key] = copy.deepcopy(values.get(key))
    return out


def _named(values: Mapping[str, Any], section: str, key: str) -> dict[str, Any] | None:
    """``{name: <values.section.key>}`` when that value is set, as the template writes a config reference."""
    name = (values.get(section) or {}).get(key)
    return {"name": name} if name else None


def _licensing(values: Mapping[str, Any]) -> dict[str, Any] | None:
    nls = values.get("nlsEnabled")
    nls = True if nls is None or nls == "" else nls  # the template's `| default true`
    if values.get("secretName"):
        return {"secretName": values["secretName"], "nlsEnabled": nls}
    if values.get("configMapName"):
        return {"name": values["configMapName"], "nlsEnabled": nls}
    return None


def _driver_spec(plan: Plan, bundle: str) -> dict[str, Any]:
    """The NVIDIADriver ``spec`` shared by every CR, in the order of the chart's ``templates/nvidiadriver.yaml``."""
    values = operator_values(bundle)
    chart_driver: Mapping[str, Any] = values["driver"]
    daemonsets: Mapping[str, Any] = values.get("daemonsets") or {}
    props = spec_schema(bundle, "nvidiadrivers")["properties"]
    driver = plan.driver
    rdma = chart_driver.get("rdma") or {}
    spec: dict[str, Any] = {
        "repository": driver.repository,
        "image": driver.image,
        "version": driver.version,
        "kernelModuleType": chart_driver.get("kernelModuleType", "auto"),
        "usePrecompiled": plan.precompiled,
        "driverType": (chart_driver.get("nvidiaDriverCRD") or {}).get("driverType") or "gpu",
        "annotations": copy.deepcopy(daemonsets.get("annotations")),
        "labels": copy.deepcopy(daemonsets.get("labels")),
        "imagePullSecrets": list(driver.imagePullSecrets),
    }
    # Copied whole (`toYaml`), empty lists included: the driver manager's `env` travels with it.
    for key in ("manager", "startupProbe", "livenessProbe", "readinessProbe"):
        spec[key] = copy.deepcopy(chart_driver.get(key))
    if driver.upgradePolicy is not None:
        spec["upgradePolicy"] = template_upgrade_policy(driver.upgradePolicy.values_form())
    elif chart_driver.get("upgradePolicy"):
        spec["upgradePolicy"] = template_upgrade_policy(chart_driver["upgradePolicy"])
    spec["rdma"] = {"enabled": rdma.get("enabled"), "useHostMofed": rdma.get("useHostMofed")}
    spec["tolerations"] = copy.deepcopy(daemonsets.get("tolerations"))
    if plan.mode is Mode.UPSTREAM and driver.repoConfig.configMapName:
        spec["repoConfig"] = {"name": driver.repoConfig.configMapName}
    spec["certConfig"] = _named(chart_driver, "certConfig", "name")
    spec["licensingConfig"] = _licensing(chart_driver.get("licensingConfig") or {})
    spec["virtualTopologyConfig"] = _named(chart_driver, "virtualTopology", "config")
    spec["kernelModuleConfig"] = _named(chart_driver, "kernelModuleConfig", "name")
    for key in ("secretEnv", "resources", "env", "args"):
        spec[key] = copy.deepcopy(chart_driver.get(key))
    spec["hostNetwork"] = chart_driver.get("hostNetwork") or None  # written only when true
    if (values.get("gds") or {}).get("enabled"):
        spec["gds"] = _operand(values["gds"])
    if values.get("gdrcopy"):
        spec["gdrcopy"] = _operand(values["gdrcopy"])
    if driver.operandRegistry:  # the driver manager, GDS and GDRCopy come from the private registry too
        for key in ("manager", "gds", "gdrcopy"):
            section = spec.get(key)
            if isinstance(section, dict) and section.get("repository"):
                section["repository"] = private_repository(section["repository"], driver.operandRegistry)
    return {k: v for k, v in spec.items() if k in props and not is_empty(v)}


def _nvidia_driver(name: str, spec: Mapping[str, Any], *, default: bool | None, os_id: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {}
    if default is not None:
        body["default"] = default
    body.update(copy.deepcopy(dict(spec)))
    if os_id:
        body["nodeSelector"] = {LABEL_OS_ID: os_id}
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name}, "spec": body}


def nvidia_drivers(plan: Plan, facts: ClusterFacts) -> list[dict[str, Any]]:
    """NVIDIADriver CRs: one for every OS pool, split by OS only where pools need different settings.

    The only per-pool difference the plan can cause is repoConfig: the operator mounts it only
    for the distributions it knows, so GPU nodes of another distribution get their own CR
    without it. A release whose CRD has ``spec.default`` (v26.7 on) gets a fallback CR (no nodeSelector
    allowed); older releases need disjoint nodeSelectors on every CR once there is more than one.
    """
    if not (plan.driver_enabled and plan.driver.useNvidiaDriverCRD):
        return []
    bundle = plan.operator.bundle
    spec = _driver_spec(plan, bundle)
    has_default = "default" in spec_schema(bundle, "nvidiadrivers")["properties"]
    os_ids = sorted({n.os_id for n in facts.gpu_nodes if n.os_id})
    known = repo_config_dirs(plan.operator.version)
    unsupported = [i for i in os_ids if i not in known]
    supported = [i for i in os_ids if i in known]
    if "repoConfig" not in spec or not unsupported or not supported:
        return [_nvidia_driver(DEFAULT_NVIDIADRIVER_NAME, spec, default=True if has_default else None)]
    plain = {k: v for k, v in spec.items() if k != "repoConfig"}
    if has_default:
        docs = [_nvidia_driver(DEFAULT_NVIDIADRIVER_NAME, spec, default=True)]
        return docs + [_nvidia_driver(f"gpu-driver-{i}", plain, default=False, os_id=i) for i in unsupported]
    return [_nvidia_driver(f"gpu-driver-{i}", spec if i in known else plain, default=None, os_id=i) for i in os_ids]
