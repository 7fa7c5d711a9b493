"""The custom resources and Helm values the wizard renders, built from the release's chart defaults.

A fresh ClusterPolicy is what ``helm install`` of the chosen release would create: the chart's
``values.yaml`` projected onto the ClusterPolicy CRD the way ``templates/clusterpolicy.yaml`` does
(empty strings, lists and maps left out, booleans kept, the operator image version defaulting to
the chart's appVersion, i.e. the release tag), then the fields the wizard owns set from the plan.
The same owned fields, alone, form the server-side-apply patch for a cluster that already has a
ClusterPolicy. NVIDIADriver CRs follow ``templates/nvidiadriver.yaml``.

Where the template does more than copy values, it is reproduced here: ``upgradePolicy`` is rewritten
(``gpuPodDeletion`` becomes ``podDeletion``: without it every later driver upgrade stalls at pod
deletion), ``daemonsets.labels`` always names the operator as manager, and from v26.7.0 a policy in
NVIDIADriver mode keeps only the switches and the upgrade policy under ``driver``.
``tests/test_chart_parity.py`` renders the real chart to hold this to it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

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
#: ``gpu-operator.name`` in the chart: the manager label it puts on every operand (``daemonsets.labels``).
OPERAND_MANAGER_LABELS = {"app.kubernetes.io/managed-by": "gpu-operator"}
# Releases whose clusterpolicy.yaml keeps only these keys under `driver` when `nvidiaDriverCRD.enabled`
# (the `if not .Values.driver.nvidiaDriverCRD.enabled` guard first appears in v26.7.0's template).
_SLIM_DRIVER_RELEASES = frozenset({"v26.7.0"})
_SLIM_DRIVER_KEYS = ("enabled", "useNvidiaDriverCRD", "upgradePolicy", "hostNetwork")
# Releases whose nvidiadriver.yaml writes `version: {{ .Values.driver.version }}` unquoted (v26.7.0 quotes it):
# a version such as 580 becomes a number there, which the CRD refuses.
_UNQUOTED_NVIDIADRIVER_VERSION = frozenset({"v25.10.1", "v26.3.3"})
_YAML11 = VersionedResolver(version=(1, 1))
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


def _without_none(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v is not None}


def template_upgrade_policy(values: Mapping[str, Any]) -> dict[str, Any]:
    """``driver.upgradePolicy`` as the chart's templates write it from the values (both CR kinds).

    The values call the GPU pod deletion options ``gpuPodDeletion``; the CRDs call them
    ``podDeletion``, and the operator's upgrade library refuses an upgrade without them.
    """
    waiting = values.get("waitForCompletion") or {}
    deletion = values.get("gpuPodDeletion") or {}
    drain = values.get("drain") or {}
    wait_for = _without_none(
        {"timeoutSeconds": waiting.get("timeoutSeconds"), "podSelector": waiting.get("podSelector") or None}
    )
    drain_out = _without_none(
        {
            "enable": drain.get("enable") or False,
            "force": drain.get("force") or False,
            "podSelector": drain.get("podSelector") or None,
            "timeoutSeconds": drain.get("timeoutSeconds"),
            "deleteEmptyDir": drain.get("deleteEmptyDir") or False,
        }
    )
    pod_deletion = _without_none(
        {
            "force": deletion.get("force") or False,
            "timeoutSeconds": deletion.get("timeoutSeconds"),
            "deleteEmptyDir": deletion.get("deleteEmptyDir") or False,
        }
    )
    return {
        "autoUpgrade": values.get("autoUpgrade") or False,
        "maxParallelUpgrades": values.get("maxParallelUpgrades") or 0,
        "maxUnavailable": values.get("maxUnavailable") or "25%",
        "waitForCompletion": wait_for,
        "podDeletion": pod_deletion,
        "drain": drain_out,
    }


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
            if section.get("upgradePolicy"):
                projected["upgradePolicy"] = template_upgrade_policy(section["upgradePolicy"])
        if key == "daemonsets":
            labels = {**OPERAND_MANAGER_LABELS, **(section.get("labels") or {})}
            projected = {"labels": labels, **{k: v for k, v in projected.items() if k != "labels"}}
        spec[key] = projected
    return spec


def slim_driver(plan: Plan) -> bool:
    """Whether the release's chart leaves the driver image fields out of the ClusterPolicy (NVIDIADriver mode)."""
    return plan.driver_enabled and plan.driver.useNvidiaDriverCRD and plan.operator.bundle in _SLIM_DRIVER_RELEASES


def plain_yaml_is_string(value: str) -> bool:
    """Whether ``value`` written unquoted reads back as a string (YAML 1.1, as kubectl and Helm read it)."""
    return bool(_YAML11.resolve(ScalarNode, value, (True, False)) == "tag:yaml.org,2002:str")


def chart_deploys_default_cr(plan: Plan) -> bool:
    """Whether the chart can deploy NVIDIADriver ``default`` from the values (``deployDefaultCR``).

    v25.10.1 and v26.3.3 write the driver version unquoted, so a driver branch such as ``580``
    (every precompiled plan) becomes a number and the API server refuses the CR: then the CR is
    applied beside the release, from ``nvidiadrivers.yaml``.
    """
    return plan.operator.bundle not in _UNQUOTED_NVIDIADRIVER_VERSION or plain_yaml_is_string(plan.driver.version)


def toolkit_install_dir(plan: Plan, facts: ClusterFacts) -> str:
    """``toolkit.installDir``: the plan's answer, else the OS profile's recommendation."""
    return plan.toolkit.installDir or facts.recommend_toolkit_dir().value


def env_list(env: Mapping[str, str]) -> list[dict[str, str]]:
    """``NAME -> value`` as a container env list (the CRD's and the chart's ``toolkit.env`` shape)."""
    return [{"name": name, "value": value} for name, value in env.items()]


def owned_values(plan: Plan, toolkit_dir: str, toolkit_env: Mapping[str, str] | None = None) -> list[tuple[Path, Any]]:
    """The ClusterPolicy ``spec`` fields the wizard owns, with the plan's values, in a stable order.

    ``toolkit_env`` is the runtime flavour's env (:func:`wizard.engine.runtime.toolkit_env`); without
    it, the answers' own ``toolkit.env``. Owned only when not empty: plain containerd adds nothing.
    """
    driver = plan.driver
    owned: list[tuple[Path, Any]] = [(("driver", "enabled"), plan.driver_enabled)]
    if slim_driver(plan):  # the image fields live in the NVIDIADriver CRs only
        owned.append((("driver", "useNvidiaDriverCRD"), True))
    elif plan.driver_enabled:
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
    if plan.driver_enabled and driver.upgradePolicy is not None:
        # as the chart's template writes the same values: a Helm install and a direct apply agree
        owned.append((UPGRADE_POLICY, template_upgrade_policy(driver.upgradePolicy.values_form())))
    owned.append((("toolkit", "installDir"), toolkit_dir))
    env = plan.toolkit.env if toolkit_env is None else toolkit_env
    if env:
        owned.append((("toolkit", "env"), env_list(env)))
    if plan.driver_enabled or plan.hostPaths.driverInstallDir:
        owned.append((("hostPaths", "driverInstallDir"), plan.hostPaths.driverInstallDir or DEFAULT_DRIVER_INSTALL_DIR))
    return owned


UPGRADE_POLICY: Path = ("driver", "upgradePolicy")
"""The whole upgrade policy: the wizard owns it when the plan says it (``driver.upgradePolicy``)."""
POD_DELETION: Path = ("driver", "upgradePolicy", "podDeletion")
"""The upgrade policy's GPU pod deletion options: the operator stalls every driver upgrade without them."""


def repair_values(
    plan: Plan,
    live_spec: Mapping[str, Any],
    *,
    wizard_owns_pod_deletion: bool,
    wizard_owns_upgrade_policy: bool = False,
) -> list[tuple[Path, Any]]:
    """Fields to send with the owned ones so that a live ClusterPolicy keeps what the operator needs.

    gpu-wizard before chart parity created policies without ``driver.upgradePolicy.podDeletion``
    (the chart's template renames ``gpuPodDeletion``; the projection dropped it), so the next apply
    adds the chart's default. From then on the wizard's manager owns it, and server-side apply
    removes a field its manager stops sending: while it owns it, it sends the live value back.
    """
    if plan.driver.upgradePolicy is not None and plan.driver_enabled:
        return []  # the plan's own policy is sent whole (owned_values)
    upgrade = (live_spec.get("driver") or {}).get("upgradePolicy")
    chart_upgrade = operator_values(plan.operator.bundle)["driver"].get("upgradePolicy")
    if wizard_owns_upgrade_policy and isinstance(upgrade, Mapping) and plan.driver_enabled:
        # an earlier plan set the policy; this one leaves it alone: keep it, or the apply would drop it
        kept = copy.deepcopy(dict(upgrade))
        if not kept.get("podDeletion") and chart_upgrade:
            kept["podDeletion"] = template_upgrade_policy(chart_upgrade)["podDeletion"]
        return [(UPGRADE_POLICY, kept)]
    live = upgrade.get("podDeletion") if isinstance(upgrade, Mapping) else None
    if live and wizard_owns_pod_deletion:
        return [(POD_DELETION, copy.deepcopy(live))]
    if live or not plan.driver_enabled or not chart_upgrade:
        return []
    return [(POD_DELETION, template_upgrade_policy(chart_upgrade)["podDeletion"])]


def set_path(target: dict[str, Any], path: Path, value: Any) -> None:
    """Set ``target[path[0]][path[1]]... = value``, creating maps on the way."""
    node = target
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = copy.deepcopy(value)


def _policy(
    spec: dict[str, Any], plan: Plan, toolkit_dir: str, toolkit_env: Mapping[str, str] | None
) -> dict[str, Any]:
    for path, value in owned_values(plan, toolkit_dir, toolkit_env):
        set_path(spec, path, value)
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": CLUSTER_POLICY_NAME},
        "spec": spec,
    }


def cluster_policy(plan: Plan, toolkit_dir: str, toolkit_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The complete ClusterPolicy for a fresh install: chart defaults, then the plan's fields."""
    policy = _policy(chart_spec(plan.operator.bundle), plan, toolkit_dir, toolkit_env)
    if slim_driver(plan):
        driver = policy["spec"]["driver"]
        policy["spec"]["driver"] = {k: driver[k] for k in _SLIM_DRIVER_KEYS if k in driver}
    return policy


def patch_policy(plan: Plan, toolkit_dir: str, toolkit_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The minimal server-side-apply patch: identity plus only the owned ``spec`` fields."""
    return _policy({}, plan, toolkit_dir, toolkit_env)


# Optional operand sections of the NVIDIADriver (gds only when enabled; gdrcopy whenever the values have it).
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


def helm_values(
    plan: Plan, toolkit_dir: str, drivers: list[dict[str, Any]], toolkit_env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The minimal ``--values`` overrides giving the same install through the release's chart.

    The driver image fields are always written; everything else only where it differs from the
    chart default. With NVIDIADriver the chart deploys CR ``default`` itself (``deployDefaultCR``)
    when the rendered CRs include it and the chart can write it (:func:`chart_deploys_default_cr`);
    other CRs are applied separately.
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
        if spec.upgradePolicy is not None:
            driver["upgradePolicy"] = spec.upgradePolicy.values_form()
        if spec.useNvidiaDriverCRD:
            names = {d["metadata"]["name"] for d in drivers}
            driver["nvidiaDriverCRD"] = {
                "enabled": True,
                "deployDefaultCR": DEFAULT_NVIDIADRIVER_NAME in names and chart_deploys_default_cr(plan),
            }
    out: dict[str, Any] = {"driver": driver}
    toolkit: dict[str, Any] = {}
    if toolkit_dir != chart["toolkit"].get("installDir"):
        toolkit["installDir"] = toolkit_dir
    env = plan.toolkit.env if toolkit_env is None else toolkit_env
    if env:
        toolkit["env"] = env_list(env)
    if toolkit:
        out["toolkit"] = toolkit
    install_dir = plan.hostPaths.driverInstallDir
    if install_dir and install_dir != chart["hostPaths"].get("driverInstallDir"):
        out["hostPaths"] = {"driverInstallDir": install_dir}
    return out
