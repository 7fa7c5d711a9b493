"""Who owns the live ClusterPolicy (and NVIDIADrivers): a Helm release, OLM, or nobody — and what that means.

A server-side apply on an object a Helm release manages is undone by that release's next
``helm upgrade``: Helm's three-way merge puts the chart's values back, so a driver change made
directly disappears weeks later. OLM reconciles the ClusterPolicy its ClusterServiceVersion
created from the CSV's ``alm-examples`` only at install; later edits stay, but an operator upgrade
through OLM may replace them. Decided from the object's metadata only (never from Helm's release
Secrets, which hold the whole values file and may hold credentials).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Manager = Literal["helm", "olm", "none"]

HELM_RELEASE_NAME = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
MANAGED_BY = "app.kubernetes.io/managed-by"
HELM_CHART = "nvidia/gpu-operator"
"""The chart reference NVIDIA's install guide uses (repo ``nvidia`` = https://helm.ngc.nvidia.com/nvidia)."""


@dataclass(frozen=True)
class Ownership:
    """The manager of one live object."""

    manager: Manager
    object_name: str = ""
    release: str = ""
    """Helm release name (``helm``) or ClusterServiceVersion name (``olm``)."""
    namespace: str = ""
    """Helm release namespace."""

    @property
    def helm(self) -> bool:
        return self.manager == "helm"

    @property
    def dry_run_takes_fields(self) -> bool:
        """Whether the TUI's server dry-run forces field ownership: Helm owns the policy's fields (its field
        manager), so a plain dry-run is refused with a conflict, though the change goes through ``helm upgrade``
        and a direct apply means taking them over (the confirmation says so)."""
        return self.helm

    def why_not_apply(self) -> str:
        """Why a direct apply is risky on this object ("" when nobody manages it)."""
        if self.manager == "helm":
            return (
                f"Helm release {self.release} (namespace {self.namespace}) manages ClusterPolicy {self.object_name}: "
                "a direct apply would be reverted by the next `helm upgrade` (Helm's three-way merge puts the "
                "chart's values back), so the change must go into the release's values"
            )
        if self.manager == "olm":
            return (
                f"OLM created ClusterPolicy {self.object_name} from ClusterServiceVersion {self.release}: a direct "
                "apply is kept, but an operator upgrade through OLM may replace the object with the new CSV's example"
            )
        return ""


def ownership_of(obj: Mapping[str, Any] | None) -> Ownership:
    """Who manages ``obj`` (a live ClusterPolicy or NVIDIADriver), from its labels, annotations and owners."""
    if not obj:
        return Ownership("none")
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    release = str(annotations.get(HELM_RELEASE_NAME) or "")
    if release or str(labels.get(MANAGED_BY) or "").lower() == "helm":
        namespace = str(annotations.get(HELM_RELEASE_NAMESPACE) or "")
        return Ownership("helm", name, release or "gpu-operator", namespace or "gpu-operator")
    for owner in meta.get("ownerReferences") or []:
        if isinstance(owner, Mapping) and owner.get("kind") == "ClusterServiceVersion":
            return Ownership("olm", name, str(owner.get("name") or ""))
    if any(str(key).startswith("operators.coreos.com/") for key in labels):
        return Ownership("olm", name, "")
    return Ownership("none", name)


REUSE_VALUES = "--reuse-values"
RESET_THEN_REUSE = "--reset-then-reuse-values"
"""For a new chart version: ``--reuse-values`` takes the old chart's values whole, and a template of the new chart
that reads a value the old one lacked fails (the lane's release upgrade test: ``nil pointer evaluating
interface {}.enabled`` at ``.Values.kataSandboxDevicePlugin``); this starts from the new chart's defaults, then
the release's own values."""


def reuse_flag(running_release: str, chart_version: str) -> str:
    """How ``helm upgrade`` keeps the release's values: as they are, or over a new chart's defaults."""
    return RESET_THEN_REUSE if running_release and running_release != chart_version else REUSE_VALUES


def helm_upgrade_command(owner: Ownership, chart_version: str, values_file: str, running_release: str = "") -> str:
    """The exact ``helm upgrade`` that carries the change, keeping every other value of the release
    (``running_release``: the operator release the cluster runs; another one than ``chart_version`` is a chart
    upgrade)."""
    argv = [
        "helm",
        "upgrade",
        owner.release,
        HELM_CHART,
        "-n",
        owner.namespace,
        "--version",
        chart_version,
        reuse_flag(running_release, chart_version),
        "-f",
        values_file,
    ]
    return shlex.join(argv)
