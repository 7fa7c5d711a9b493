"""The custom resources and Helm values the wizard renders, built from the release's chart defaults.

A fresh ClusterPolicy is what ``helm install`` of the chosen release would create: the chart's
``values.yaml`` projected onto the ClusterPolicy CRD the way ``templates/clusterpolicy.yaml`` does
(empty strings, lists and maps left out, booleans kept, the operator image version defaulting to
the chart's appVersion, i.e. the release tag), then the fields the wizard owns set from the plan.
The same owned fields, alone, form the server-side-apply patch for a cluster that already has a
ClusterPolicy. NVIDIADriver CRs follow ``templates/nvidiadriver.yaml``
(:mod:`wizard.engine.render_nvidiadriver`).

Where the template does more than copy values, it is reproduced here: ``upgradePolicy`` is rewritten
(``gpuPodDeletion`` becomes ``podDeletion``: without it every later driver upgrade stalls at pod
deletion), ``daemonsets.labels`` always names the operator as manager, and where the release's template
says so (release.yaml ``chart.slimDriverKeys``: from v26.7) a policy in NVIDIADriver mode keeps only the
switches and the upgrade policy under ``driver``.
``tests/test_chart_parity.py`` renders the real chart to hold this to it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver

from wizard.bundled import operator_crd, operator_values
from wizard.engine import releases
from wizard.engine.facts import ClusterFacts
from wizard.engine.operand_images import policy_repositories, values_repositories
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
_YAML11 = VersionedResolver(version=(1, 1))
# Operands whose image version defaults to the chart's appVersion (the release tag).
_APP_VERSION_SECTIONS = ("validator", "nodeStatusExporter")

Path = tuple[str, ...]


def is_empty(value: Any) -> bool:
    """None, an empty string, list or map: what the chart's templates leave out (their ``if``)."""
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
                if not is_empty(projected):
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
    return bool(plan.driver_enabled and plan.driver.useNvidiaDriverCRD and _slim_driver_keys(plan))


def _slim_driver_keys(plan: Plan) -> tuple[str, ...]:
    """The keys the release's clusterpolicy.yaml keeps under ``driver`` with NVIDIADriver on (release.yaml)."""
    return releases.rules(plan.operator.bundle).chart.slimDriverKeys


def plain_yaml_is_string(value: str) -> bool:
    """Whether ``value`` written unquoted reads back as a string (YAML 1.1, as kubectl and Helm read it)."""
    return bool(_YAML11.resolve(ScalarNode, value, (True, False)) == "tag:yaml.org,2002:str")


def chart_deploys_default_cr(plan: Plan) -> bool:
    """Whether the chart can deploy NVIDIADriver ``default`` from the values (``deployDefaultCR``).

    Where the release's chart writes the driver version unquoted (release.yaml
    ``chart.quotesNvidiaDriverVersion: false``: v25.10 and v26.3), a driver branch such as ``580`` (every
    precompiled plan) becomes a number and the API server refuses the CR: then the CR is applied beside
    the release, from ``nvidiadrivers.yaml``.
    """
    quoted = releases.rules(plan.operator.bundle).chart.quotesNvidiaDriverVersion
    return quoted or plain_yaml_is_string(plan.driver.version)


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
    if plan.driver.operandRegistry:
        owned += policy_repositories(plan, chart_spec(plan.operator.bundle), skip_driver=slim_driver(plan))
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
        policy["spec"]["driver"] = {k: driver[k] for k in _slim_driver_keys(plan) if k in driver}
    return policy


def patch_policy(plan: Plan, toolkit_dir: str, toolkit_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The minimal server-side-apply patch: identity plus only the owned ``spec`` fields."""
    return _policy({}, plan, toolkit_dir, toolkit_env)


# Optional operand sections of the NVIDIADriver (gds only when enabled; gdrcopy whenever the values have it).
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
    if plan.driver.operandRegistry:  # every image of the chart, the operator's own and the NFD subchart's included
        for path, value in values_repositories(plan, chart):
            set_path(out, path, value)
    return out
