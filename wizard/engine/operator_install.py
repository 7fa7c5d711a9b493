"""Installing the GPU Operator (day 0): the chosen release's chart as a Helm release, with the plan's values.

When a cluster has no operator (no CRDs, or CRDs and no operator Deployment), the chart's defaults are the
wrong first install: its default ClusterPolicy starts NVIDIA's upstream driver at once (on SLE Micro the
failure gpu-wizard exists to prevent; air-gapped, an image the nodes cannot pull). So the wizard installs
the chart itself, with the values the plan renders (``render.release_values``: driver mode, repositories,
paths, runtime, pull secrets written out explicitly), and the operator's first reconcile already renders
the planned driver. This module is the pure part: where the chart comes from, the values file, the exact
``helm`` argv and what the install pulls. Running it (the ``helm`` binary, or the printed commands and a
wait for the operator) is ``wizard.cluster.applying.operator_install``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wizard.bundled import operator_values
from wizard.engine.deployers import CHART_HELP
from wizard.engine.naming import image_path
from wizard.engine.ownership import HELM_CHART, reuse_flag
from wizard.engine.releases import bundle_of, rules
from wizard.engine.render import Rendered, release_values, to_yaml, values_yaml
from wizard.engine.textsafe import shell_command

RELEASE_NAME = "gpu-operator"
"""The Helm release name NVIDIA's install guide uses (later applies find it through the objects' annotations)."""

_OCI_RE = re.compile(r"^oci://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._-]+)+(:[A-Za-z0-9._-]{1,128})?$")
_PATH_RE = re.compile(r"^[A-Za-z0-9._/~+-]{1,1024}$")


@dataclass(frozen=True)
class ChartSource:
    """Where ``helm`` takes the chart from: the release data's repository, a local chart or an OCI reference."""

    reference: str
    """``gpu-operator`` (with ``repository``), a path, or ``oci://host/path[:tag]``."""
    repository: str = ""
    """``--repo URL`` (the release data's chart repository), "" for a local chart or an OCI reference."""
    version: str = ""
    """``--version`` (the release), "" where the reference fixes it (a local chart, an OCI reference with a tag)."""

    def argv(self) -> list[str]:
        """The chart's part of ``helm upgrade --install NAME …``."""
        repo = ["--repo", self.repository] if self.repository else []
        version = ["--version", self.version] if self.version else []
        return [self.reference, *repo, *version]

    def words(self) -> str:
        """The chart in words for a confirmation."""
        if self.repository:
            return f"chart {self.reference} {self.version} from {self.repository}"
        return f"chart {self.reference}" + (f" {self.version}" if self.version else "")


def chart_source(release: str, chart: str | None = None) -> ChartSource:
    """The chart for ``release``: the release data's repository, or the one the user names (ValueError if bad)."""
    if not chart:
        published = rules(release).helmChart
        return ChartSource(published.name, published.repository, release)
    if chart.startswith("oci://"):
        if not _OCI_RE.match(chart) or len(chart) > 512:
            raise ValueError(f"--chart: {chart[:80]!r} is not {CHART_HELP}")
        tagged = ":" in chart.removeprefix("oci://").split("/", 1)[1]
        return ChartSource(chart, "", "" if tagged else release)
    if "://" in chart or not _PATH_RE.match(chart):
        raise ValueError(f"--chart: {chart[:80]!r} is not {CHART_HELP}")
    return ChartSource(chart)


def upgrade_argv(
    release_name: str,
    namespace: str,
    chart: ChartSource,
    values_file: str,
    kube: tuple[str, ...] = (),
    running_release: str = "",
    release: str = "",
) -> list[str]:
    """``helm upgrade`` of a Helm-owned install with the change's values, keeping every other value it holds
    (``ownership.reuse_flag``: over the new chart's defaults when ``running_release`` is not the plan's ``release``);
    ``--wait`` off, the wizard follows the rollout itself."""
    return [
        "helm",
        "upgrade",
        release_name,
        *chart.argv(),
        "--namespace",
        namespace,
        reuse_flag(running_release, release),
        "--values",
        values_file,
        *kube,
    ]


def chart_release_mismatch(install: OperatorInstall, app_version: str) -> str:
    """Why a local chart would not install ``install.release`` ("" when it would, or names no appVersion).

    The chart deploys the operator (and the ClusterPolicy's validator) at its ``appVersion`` where the values name no
    version, so a chart folder taken from the operator's repository (``appVersion: main-latest``) or from another
    release runs an operator image the release never published: found before helm runs, not as an ImagePullBackOff
    after the install."""
    if not app_version or app_version.lstrip("v") == install.release.lstrip("v"):
        return ""
    published = rules(install.release).helmChart
    chart = operator_values(bundle_of(install.release) or install.release)["operator"]
    image = image_path(chart["repository"], chart["image"], app_version)
    return (
        f"{install.chart.words()} has appVersion {app_version}, not {install.release}: it would run the operator and "
        f"its validator as {image}; use GPU Operator {install.release}'s published chart (helm pull "
        f"{published.name} --repo {published.repository} --version {install.release})"
    )


def operator_image(release: str, values: dict[str, Any] | None = None) -> str:
    """The operator's own image the chart deploys (``operator.repository/image:version``, version = release)."""
    bundle = bundle_of(release)
    if bundle is None:
        raise KeyError(f"{release} is not a release gpu-wizard knows")
    chart = operator_values(bundle)["operator"]
    section = {**chart, **((values or {}).get("operator") or {})}
    return image_path(section["repository"], section["image"], section.get("version") or release)


@dataclass(frozen=True)
class OperatorInstall:
    """One install of the operator: the Helm release, its chart, the values file and what it pulls."""

    release: str
    """The operator release (``vMAJOR.MINOR.PATCH``): the chart version."""
    namespace: str
    chart: ChartSource
    values: dict[str, Any]
    values_text: str
    images: tuple[str, ...]
    """The operator's image, the driver's per node, then every other image the plan makes the cluster pull (each
    operand's, ``Rendered.images``, mapped into the private registry where the plan has one), once each."""
    drivers: tuple[dict[str, Any], ...] = ()
    """NVIDIADriver CRs the chart does not deploy (it deploys at most ``default``), applied after the install."""
    drivers_text: str = ""
    driver_names: tuple[str, ...] = ()
    name: str = RELEASE_NAME

    def helm_argv(self, values_file: str, kube: tuple[str, ...] = ()) -> list[str]:
        """``helm upgrade --install`` without ``--wait`` (the wizard follows the rollout itself)."""
        return [
            "helm",
            "upgrade",
            "--install",
            self.name,
            *self.chart.argv(),
            "--namespace",
            self.namespace,
            "--create-namespace",
            "--values",
            values_file,
            *kube,
        ]

    def command(self, values_file: str, kube: tuple[str, ...] = ()) -> str:
        """The same as one quoted shell command, for the person to run where the wizard cannot."""
        return shell_command(self.helm_argv(values_file, kube))

    def summary(self, *, images: bool = True) -> list[str]:
        """What will be installed, one line each (the confirmation's words; without ``images`` where a page counts
        them on a line of its own)."""
        lines = [
            f"install GPU Operator {self.release} as Helm release {self.name} in namespace {self.namespace}",
            f"  {self.chart.words()}",
        ]
        if images:
            lines += ["  images:", *(f"    {image}" for image in self.images)]
        if self.driver_names:
            lines.append(f"  then NVIDIADriver {', '.join(self.driver_names)} (the chart deploys only 'default')")
        return lines


def operator_install(rendered: Rendered, chart: ChartSource | None = None) -> OperatorInstall:
    """The install of ``rendered``'s release with its values: the first reconcile renders the plan's driver."""
    plan = rendered.plan
    release = plan.operator.version
    source = chart or chart_source(release)
    values = release_values(rendered, None)
    header = [
        f"gpu-wizard: values that install GPU Operator {release} ({plan.mode.value} mode) as Helm release "
        f"{RELEASE_NAME} in namespace {plan.operator.namespace}.",
        f"Every field gpu-wizard owns is set, so the operator's first reconcile renders the planned driver "
        f"(never the chart's default); the chart is {HELM_CHART} or the one named with --chart.",
    ]
    crd = (values.get("driver") or {}).get("nvidiaDriverCRD") or {}
    extra = [
        d for d in rendered.nvidia_drivers if not (crd.get("deployDefaultCR") and d["metadata"]["name"] == "default")
    ]
    operator = operator_image(release, values)
    drivers = sorted({n.image for n in rendered.node_images if n.image})  # what the user chose, before the operands
    return OperatorInstall(
        release=release,
        namespace=plan.operator.namespace,
        chart=source,
        values=values,
        values_text=values_yaml(values, header),
        images=tuple(dict.fromkeys([operator, *drivers, *rendered.images])),
        drivers=tuple(extra),
        drivers_text=to_yaml(extra) if extra else "",
        driver_names=tuple(str(d["metadata"]["name"]) for d in extra),
    )
