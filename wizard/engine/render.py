"""Rendering: everything the wizard produces from a plan and the cluster's node facts.

Pure functions only (the one input besides the arguments is the bundled chart/CRD data of the
plan's operator release): the ClusterPolicy for a fresh install and the minimal server-side-apply
patch for an existing one, the NVIDIADriver CRs, the expected driver image per GPU node, the mirror
plan, the equivalent Helm values, and the warnings and notes. The pieces live in
:mod:`wizard.engine.render_policy`, :mod:`wizard.engine.render_nvidiadriver`, :mod:`wizard.engine.mirror`,
:mod:`wizard.engine.advice` and :mod:`wizard.engine.crd_schema`; this module is the public face and re-exports what callers need.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML

from wizard.engine.advice import Advice, advice_text, advise
from wizard.engine.crd_schema import validate_against_crd
from wizard.engine.facts import ClusterFacts
from wizard.engine.mirror import (
    MirrorItem,
    NodeImage,
    images_table,
    mirror_items,
    mirror_script,
    node_images,
    operand_mirror_items,
)
from wizard.engine.operand_images import OperandImage, image_list, operand_images
from wizard.engine.plan import DEFAULT_DRIVER_INSTALL_DIR, Plan
from wizard.engine.render_nvidiadriver import nvidia_drivers
from wizard.engine.render_policy import (
    DEFAULT_NVIDIADRIVER_NAME,
    cluster_policy,
    helm_values,
    owned_values,
    patch_policy,
    plain_yaml_is_string,
    toolkit_install_dir,
)
from wizard.engine.runtime import RuntimeChoice, runtime_advice, runtime_choice, toolkit_env
from wizard.engine.textsafe import printable, shell_command

__all__ = [
    "Advice",
    "MirrorItem",
    "NodeImage",
    "OperandImage",
    "Rendered",
    "advice_text",
    "apply_patch",
    "crd_errors",
    "helm_yaml",
    "images_table",
    "mirror_script",
    "owned_paths",
    "render",
    "shell_command",
    "to_yaml",
    "validate_against_crd",
]


@dataclass(frozen=True)
class Rendered:
    """Everything rendered for one plan on one cluster."""

    plan: Plan
    cluster_policy: dict[str, Any]
    """The complete ClusterPolicy for a fresh install."""
    nvidia_drivers: list[dict[str, Any]]
    """NVIDIADriver CRs (empty unless ``driver.useNvidiaDriverCRD``)."""
    node_images: list[NodeImage]
    mirror: list[MirrorItem]
    helm_values: dict[str, Any]
    advice: list[Advice]
    toolkit_install_dir: str
    runtime: RuntimeChoice | None = None
    """The container runtime flavour the toolkit settings are for (None: rendered without node facts)."""
    operand_images: tuple[OperandImage, ...] = ()
    """Every image besides the driver's the ClusterPolicy makes the cluster pull (:mod:`wizard.engine.operand_images`)."""

    @property
    def images(self) -> list[str]:
        """Every distinct image the cluster pulls for this plan: the driver's per node and the operands'."""
        return image_list((entry.image for entry in self.node_images), self.operand_images)

    @property
    def toolkit_env(self) -> dict[str, str]:
        """``spec.toolkit.env`` as NAME -> value (empty when the operator's defaults fit)."""
        return dict(self.runtime.env) if self.runtime else dict(self.plan.toolkit.env or {})

    def documents(self) -> list[dict[str, Any]]:
        """The objects to apply: the ClusterPolicy, then the NVIDIADrivers."""
        return [self.cluster_policy, *self.nvidia_drivers]


def render(plan: Plan, facts: ClusterFacts) -> Rendered:
    """Render every output of ``plan`` for the nodes in ``facts``."""
    toolkit_dir = toolkit_install_dir(plan, facts)
    runtime = runtime_choice(plan, facts)
    drivers = nvidia_drivers(plan, facts)
    images = node_images(plan, facts)
    policy = cluster_policy(plan, toolkit_dir, runtime.env)
    operands = operand_images(plan, policy["spec"])
    mirror = mirror_items(plan, images) + operand_mirror_items(operands)
    return Rendered(
        plan=plan,
        cluster_policy=policy,
        nvidia_drivers=drivers,
        node_images=images,
        mirror=mirror,
        helm_values=helm_values(plan, toolkit_dir, drivers, runtime.env),
        advice=advise(plan, facts, images, mirror) + runtime_advice(runtime),
        toolkit_install_dir=toolkit_dir,
        runtime=runtime,
        operand_images=tuple(operands),
    )


def apply_patch(plan: Plan, facts: ClusterFacts) -> dict[str, Any]:
    """Minimal server-side-apply patch for an existing ClusterPolicy: only the fields the wizard owns."""
    return patch_policy(plan, toolkit_install_dir(plan, facts), toolkit_env(plan, facts))


def owned_paths(plan: Plan, env: Mapping[str, str] | None = None) -> list[tuple[str, ...]]:
    """The ClusterPolicy fields the wizard owns, as paths under ``spec`` (``("driver", "version")``)."""
    return [path for path, _ in owned_values(plan, "", env)]


def _represent_str(representer: Any, value: str) -> Any:
    # kubectl and Helm read YAML 1.1, where an unquoted off/yes/y/0755/1:20 is not a string: quote those.
    if not plain_yaml_is_string(value):
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return representer.represent_str(value)


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold long image references or messages
    yaml.representer.add_representer(str, _represent_str)
    return yaml


def to_yaml(docs: Iterable[Mapping[str, Any]]) -> str:
    """Multi-document YAML with ``---`` separators, keys in the order the renderer built them."""
    docs = [dict(d) for d in docs]
    if not docs:
        return ""
    buffer = io.StringIO()
    _yaml().dump_all(docs, buffer)
    return buffer.getvalue()


def helm_yaml(rendered: Rendered) -> str:
    """The Helm values as a ``--values`` file, with a header saying how to use it."""
    plan = rendered.plan
    release = printable(plan.operator.version)
    upgrade = [
        "helm",
        "upgrade",
        "--install",
        "gpu-operator",
        "nvidia/gpu-operator",
        "--version",
        plan.operator.version,
    ]
    header = [
        f"# gpu-wizard: Helm values for the NVIDIA GPU Operator {release} chart ({plan.mode.value} mode).",
        f"#   {shell_command(upgrade)} \\",
        f"#     {shell_command(['--namespace', plan.operator.namespace])} --create-namespace --values helm-values.yaml",
    ]
    by_chart = (rendered.helm_values["driver"].get("nvidiaDriverCRD") or {}).get("deployDefaultCR")
    extra = [
        d["metadata"]["name"]
        for d in rendered.nvidia_drivers
        if not (by_chart and d["metadata"]["name"] == DEFAULT_NVIDIADRIVER_NAME)
    ]
    if extra:
        which = "the other NVIDIADriver CRs" if by_chart else "the NVIDIADriver CRs"
        header.append(f"# Then apply {which} from nvidiadrivers.yaml: {printable(', '.join(extra))}.")
    if not by_chart and DEFAULT_NVIDIADRIVER_NAME in extra:
        header.append(
            f"# (Not deployDefaultCR: the {release} chart writes driver version {printable(plan.driver.version)}"
            " unquoted, a number the NVIDIADriver CRD refuses.)"
        )
    buffer = io.StringIO()
    _yaml().dump(rendered.helm_values, buffer)
    return "\n".join(header) + "\n" + buffer.getvalue()


def release_values(rendered: Rendered, live_policy: Mapping[str, Any] | None) -> dict[str, Any]:
    """Helm values that carry this plan into an existing release with ``helm upgrade --reuse-values -f``.

    ``--reuse-values`` keeps every value the release holds, so every field the plan owns is written
    out explicitly (not only where it differs from the chart's default), and what the live policy
    holds but the plan drops (a repoConfig, pull secrets) is cleared. Derived from the plan and the
    live object only; Helm's release Secrets are never read.
    """
    values = copy.deepcopy(rendered.helm_values)
    plan = rendered.plan
    values["toolkit"] = {**values.get("toolkit", {}), "installDir": rendered.toolkit_install_dir}
    values["hostPaths"] = {
        **values.get("hostPaths", {}),
        "driverInstallDir": plan.hostPaths.driverInstallDir or DEFAULT_DRIVER_INSTALL_DIR,
    }
    live_driver = (((live_policy or {}).get("spec") or {}).get("driver")) or {}
    driver = values.setdefault("driver", {})
    if plan.driver_enabled:
        if (live_driver.get("repoConfig") or {}).get("configMapName") and "repoConfig" not in driver:
            driver["repoConfig"] = {"configMapName": ""}
        if live_driver.get("imagePullSecrets") and "imagePullSecrets" not in driver:
            driver["imagePullSecrets"] = []
    return values


def values_yaml(values: Mapping[str, Any], header: Iterable[str] = ()) -> str:
    """Helm values as YAML (quoted for YAML 1.1 like the manifests), after ``# ``-comment header lines."""
    buffer = io.StringIO()
    _yaml().dump(dict(values), buffer)
    lines = [f"# {printable(line)}" for line in header]
    return "".join(f"{line}\n" for line in lines) + buffer.getvalue()


def crd_errors(rendered: Rendered) -> list[str]:
    """The rendered objects' errors against their release's CRD, each prefixed with ``Kind[/name]``: what the API
    server refuses, whether ``apply`` sends them or Helm installs them from the same values."""
    bundle = rendered.plan.operator.bundle
    errors = [f"ClusterPolicy: {e}" for e in validate_against_crd(rendered.cluster_policy, bundle)]
    for driver in rendered.nvidia_drivers:
        errors += [f"NVIDIADriver/{driver['metadata']['name']}: {e}" for e in validate_against_crd(driver, bundle)]
    return errors
