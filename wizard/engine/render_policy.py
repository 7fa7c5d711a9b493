"""The custom resources and Helm values the wizard renders, built from the release's chart defaults.

A fresh ClusterPolicy is what ``helm install`` of the chosen release would create: the chart's
``values.yaml`` projected onto the ClusterPolicy CRD the way ``templates/clusterpolicy.yaml`` does
(empty strings, lists and maps left out, booleans kept, the operator image version defaulting to
the chart's appVersion, i.e. the release tag), then the fields the wizard owns set from the plan.
The same owned fields, alone, form the server-side-apply patch for a cluster that already has a
ClusterPolicy. NVIDIADriver CRs follow ``templates/nvidiadriver.yaml``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from wizard.bundled import operator_crd, operator_values
from wizard.engine.facts import LABEL_OS_ID, ClusterFacts
from wizard.engine.naming import repo_config_dirs
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, Mode, Plan

CLUSTER_POLICY_NAME = "cluster-policy"
DEFAULT_NVIDIADRIVER_NAME = "default"

# `operator` values that reach the CR; the rest configure the operator Deployment itself.
_OPERATOR_CR_KEYS = ("defaultRuntime", "runtimeClass", "initContainer", "use_ocp_driver_toolkit", "metrics")
# Section order of the chart's clusterpolicy.yaml template (sections it does not list follow, in values order).
_SECTION_ORDER = (
    "operator",
    "daemonsets",
    "validator",
    "mig",
    "psa",
    "cdi",
    "sandboxWorkloads",
    "hostPaths",
    "driver",
    "toolkit",
    "devicePlugin",
    "dcgm",
    "dcgmExporter",
    "gfd",
    "migManager",
    "nodeStatusExporter",
    "gds",
    "gdrcopy",
    "vgpuManager",
    "vgpuDeviceManager",
    "vfioManager",
    "kataManager",
    "sandboxDevicePlugin",
    "kataSandboxDevicePlugin",
    "ccManager",
)
# Operands whose image version defaults to the chart's appVersion (the release tag).
_APP_VERSION_SECTIONS = ("validator", "nodeStatusExporter")

Path = tuple[str, ...]


def _is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def spec_schema(bundle: str, plural: str) -> dict[str, Any]:
    """The ``spec`` schema of a bundled CRD's first served version."""
    schema: dict[str, Any] = operator_crd(bundle, plural)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema["properties"]["spec"]  # type: ignore[no-any-return]


def project(value: Any, schema: Mapping[str, Any]) -> Any:
    """Chart values reduced to the keys the CRD knows, empty values dropped (as the template's ``if``)."""
    if isinstance(value, Mapping):
        props = schema.get("properties")
        if props is None:  # a free-form map (labels, annotations, config): copied whole
            return copy.deepcopy(dict(value))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in props:
                projected = project(item, props[key])
                if not _is_empty(projected):
                    out[key] = projected
        return out
    if isinstance(value, list):
        items = schema.get("items") or {}
        return [project(item, items) for item in value]
    return value


def chart_spec(bundle: str) -> dict[str, Any]:
    """The ClusterPolicy ``spec`` the release's chart renders with its default values."""
    values = operator_values(bundle)
    props = spec_schema(bundle, "clusterpolicies")["properties"]
    spec: dict[str, Any] = {}
    keys = sorted(values, key=lambda k: _SECTION_ORDER.index(k) if k in _SECTION_ORDER else len(_SECTION_ORDER))
    for key in keys:
        section = values[key]
        if key not in props or not isinstance(section, Mapping):
            continue
        if key == "operator":
            section = {k: section[k] for k in _OPERATOR_CR_KEYS if k in section}
        projected = project(section, props[key])
        if key in _APP_VERSION_SECTIONS and "version" in props[key].get("properties", {}):
            projected.setdefault("version", bundle)
        if key == "driver":
            projected["useNvidiaDriverCRD"] = bool((section.get("nvidiaDriverCRD") or {}).get("enabled", False))
        spec[key] = projected
    return spec


def toolkit_install_dir(plan: Plan, facts: ClusterFacts) -> str:
    """``toolkit.installDir``: the plan's answer, else the OS profile's recommendation."""
    return plan.toolkit.installDir or facts.recommend_toolkit_dir().value


def owned_values(plan: Plan, toolkit_dir: str) -> list[tuple[Path, Any]]:
    """The ClusterPolicy ``spec`` fields the wizard owns, with the plan's values, in a stable order."""
    driver = plan.driver
    owned: list[tuple[Path, Any]] = [(("driver", "enabled"), plan.driver_enabled)]
    if plan.driver_enabled:
        owned += [
            (("driver", "usePrecompiled"), plan.precompiled),
            (("driver", "repository"), driver.repository),
            (("driver", "image"), driver.image),
            (("driver", "version"), driver.version),
        ]
        if plan.mode is Mode.UPSTREAM:
            # Owned even when empty: a stale ConfigMap name from an earlier install breaks the driver pod.
            owned.append((("driver", "repoConfig", "configMapName"), driver.repoConfig.configMapName))
        owned.append((("driver", "useNvidiaDriverCRD"), driver.useNvidiaDriverCRD))
        if driver.imagePullSecrets:
            owned.append((("driver", "imagePullSecrets"), list(driver.imagePullSecrets)))
    owned.append((("toolkit", "installDir"), toolkit_dir))
    if plan.driver_enabled or plan.hostPaths.driverInstallDir:
        owned.append((("hostPaths", "driverInstallDir"), plan.hostPaths.driverInstallDir or DEFAULT_DRIVER_INSTALL_DIR))
    return owned


def set_path(target: dict[str, Any], path: Path, value: Any) -> None:
    """Set ``target[path[0]][path[1]]... = value``, creating maps on the way."""
    node = target
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def _policy(spec: dict[str, Any], plan: Plan, toolkit_dir: str) -> dict[str, Any]:
    for path, value in owned_values(plan, toolkit_dir):
        set_path(spec, path, value)
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": CLUSTER_POLICY_NAME},
        "spec": spec,
    }


def cluster_policy(plan: Plan, toolkit_dir: str) -> dict[str, Any]:
    """The complete ClusterPolicy for a fresh install: chart defaults, then the plan's fields."""
    return _policy(chart_spec(plan.operator.bundle), plan, toolkit_dir)


def patch_policy(plan: Plan, toolkit_dir: str) -> dict[str, Any]:
    """The minimal server-side-apply patch: identity plus only the owned ``spec`` fields."""
    return _policy({}, plan, toolkit_dir)


def _driver_spec(plan: Plan, bundle: str) -> dict[str, Any]:
    """The NVIDIADriver ``spec`` shared by every CR, per the chart's default-CR template."""
    values = operator_values(bundle)
    chart_driver: Mapping[str, Any] = values["driver"]
    daemonsets: Mapping[str, Any] = values.get("daemonsets") or {}
    props = spec_schema(bundle, "nvidiadrivers")["properties"]
    driver = plan.driver
    spec: dict[str, Any] = {
        "driverType": (chart_driver.get("nvidiaDriverCRD") or {}).get("driverType") or "gpu",
        "usePrecompiled": plan.precompiled,
        "repository": driver.repository,
        "image": driver.image,
        "version": driver.version,
        "kernelModuleType": chart_driver.get("kernelModuleType", "auto"),
    }
    if driver.imagePullSecrets:
        spec["imagePullSecrets"] = list(driver.imagePullSecrets)
    for key in ("manager", "startupProbe", "livenessProbe", "readinessProbe", "rdma", "upgradePolicy"):
        if key in chart_driver and key in props:
            spec[key] = project(chart_driver[key], props[key])
    for key in ("tolerations", "labels", "annotations"):
        if daemonsets.get(key):
            spec[key] = project(daemonsets[key], props[key])
    if plan.mode is Mode.UPSTREAM and driver.repoConfig.configMapName:
        spec["repoConfig"] = {"name": driver.repoConfig.configMapName}
    return {k: v for k, v in spec.items() if k in props and not _is_empty(v)}


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
    without it. v26.7.0 has ``spec.default`` (the fallback CR, no nodeSelector allowed); older
    releases need disjoint nodeSelectors on every CR once there is more than one.
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


def helm_values(plan: Plan, toolkit_dir: str, drivers: list[dict[str, Any]]) -> dict[str, Any]:
    """The minimal ``--values`` overrides giving the same install through the release's chart.

    The driver image fields are always written; everything else only where it differs from the
    chart default. With NVIDIADriver the chart deploys CR ``default`` itself (``deployDefaultCR``)
    when the rendered CRs include it; other CRs are applied separately.
    """
    chart = operator_values(plan.operator.bundle)
    driver: dict[str, Any] = {"enabled": plan.driver_enabled}
    if plan.driver_enabled:
        spec = plan.driver
        driver.update(
            usePrecompiled=plan.precompiled, repository=spec.repository, image=spec.image, version=spec.version
        )
        if plan.mode is Mode.UPSTREAM and spec.repoConfig.configMapName:
            driver["repoConfig"] = {"configMapName": spec.repoConfig.configMapName}
        if spec.imagePullSecrets:
            driver["imagePullSecrets"] = list(spec.imagePullSecrets)
        if spec.useNvidiaDriverCRD:
            names = {d["metadata"]["name"] for d in drivers}
            driver["nvidiaDriverCRD"] = {
                "enabled": True,
                "deployDefaultCR": DEFAULT_NVIDIADRIVER_NAME in names,
            }
    out: dict[str, Any] = {"driver": driver}
    if toolkit_dir != chart["toolkit"].get("installDir"):
        out["toolkit"] = {"installDir": toolkit_dir}
    install_dir = plan.hostPaths.driverInstallDir
    if install_dir and install_dir != chart["hostPaths"].get("driverInstallDir"):
        out["hostPaths"] = {"driverInstallDir": install_dir}
    return out
