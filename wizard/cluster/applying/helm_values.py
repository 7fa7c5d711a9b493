"""The change for a Helm-owned ClusterPolicy: the release's values, the ``helm upgrade`` that carries them, the file;
and the release's deployed revision as Helm recorded it (what ``gpu-wizard drift`` compares, never what a change is
derived from).

A direct apply on a policy a Helm release manages is reverted by the release's next ``helm upgrade``,
so ``gpu-wizard apply``/``upgrade`` and the TUI's Apply step both produce the change as Helm values
instead. This is the one place that composes them (values derived from the plan and the live
object, never from Helm's release Secrets) and writes them (0600, through the one file writer), so
the CLI and the TUI cannot drift apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.atomic_write import write_private
from wizard.cluster.gateway import Gateway
from wizard.engine.exclusion import describe, label_argv
from wizard.engine.helm_release import HelmRelease, ReleaseError, decode_release
from wizard.engine.leftovers import Unwanted
from wizard.engine.ownership import Ownership, helm_upgrade_command
from wizard.engine.render import Rendered, release_values, to_yaml, values_yaml
from wizard.engine.textsafe import printable, shell_command
from wizard.paths import state_dir


@dataclass(frozen=True)
class HelmChange:
    """The values file for a Helm release and the commands that carry it out."""

    owner: Ownership
    values_path: Path
    values_text: str
    command: str
    """``helm upgrade RELEASE nvidia/gpu-operator -n NS --version V --reuse-values -f FILE``."""
    drivers_path: Path | None = None
    """The NVIDIADriver CRs the chart does not deploy (NVIDIADriver mode), applied beside the helm upgrade."""
    drivers_text: str = ""
    drivers_command: str = ""
    driver_names: tuple[str, ...] = ()
    deletions: tuple[tuple[str, str], ...] = ()
    """``(delete DaemonSet NS/X, left by the operator when …, kubectl delete …)`` per driver DaemonSet the operator
    leaves behind once the release carries the change (:mod:`wizard.engine.leftovers`): run after the upgrade."""
    node_labels: tuple[tuple[str, str | None], ...] = ()
    """``(node, its nvidia.com/gpu.deploy.driver value now)`` per excluded node still to label ``false``
    (``driver.excludeNodes``; :mod:`wizard.engine.exclusion`): written after the upgrade, as a direct apply does."""

    def write(self) -> None:
        """Write the values (and the extra NVIDIADriver CRs) as private files; AtomicWriteError on failure."""
        write_private(self.values_path, self.values_text)
        if self.drivers_path is not None:
            write_private(self.drivers_path, self.drivers_text)

    def steps(self) -> list[str]:
        """The commands to run, in order."""
        drivers = [self.drivers_command] if self.drivers_command else []
        return [self.command, *drivers, *(command for _, command in (*self.deletions, *self.relabels()))]

    def relabels(self) -> tuple[tuple[str, str], ...]:
        """``(Node/X: label … -> false, kubectl label …)`` per excluded node, to run after the upgrade."""
        return tuple(
            (describe({node: before})[0], shell_command(label_argv(node))) for node, before in self.node_labels
        )


def helm_values_path(context: str) -> Path:
    """Where the Helm values for a context go unless the user names a file: the state folder."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in printable(context)) or "cluster"
    return state_dir() / "helm" / f"gpu-wizard-values-{safe}.yaml"


def helm_change(
    rendered: Rendered,
    owner: Ownership,
    live_policy: Mapping[str, Any] | None,
    target: Path,
    running_release: str = "",
    leftovers: Sequence[Unwanted] = (),
    namespace: str = "",
    node_labels: Mapping[str, str | None] | None = None,
) -> HelmChange:
    """The values that carry ``rendered`` into ``owner``'s release with ``--reuse-values`` (over the new chart's
    defaults when ``running_release``, the operator release the cluster runs, is not the plan's), to be saved at
    ``target``; ``leftovers`` (in ``namespace``): the driver DaemonSets to delete after the upgrade; ``node_labels``:
    the excluded nodes to label after it (node -> its value now)."""
    plan = rendered.plan
    labels = tuple(sorted((node_labels or {}).items()))
    deletions = tuple(
        (u.deletion(namespace), shell_command(["kubectl", "delete", "daemonset", "-n", namespace, u.name]))
        for u in leftovers
    )
    command = helm_upgrade_command(owner, plan.operator.version, str(target), running_release)
    header = [
        f"gpu-wizard: values for Helm release {owner.release} (namespace {owner.namespace}), operator "
        f"{plan.operator.version}, {plan.mode.value} mode.",
        "Only the fields gpu-wizard owns; --reuse-values keeps everything else the release holds. Apply with:",
        command,
    ]
    values = release_values(rendered, live_policy)
    text = values_yaml(values, header)
    crd = (values.get("driver") or {}).get("nvidiaDriverCRD") or {}
    extra = [
        d for d in rendered.nvidia_drivers if not (crd.get("deployDefaultCR") and d["metadata"]["name"] == "default")
    ]
    if not extra:
        return HelmChange(owner, target, text, command, deletions=deletions, node_labels=labels)
    # the chart deploys at most CR "default": the others are applied beside the helm upgrade
    drivers = target.with_name(target.stem + "-nvidiadrivers.yaml")
    return HelmChange(
        owner,
        target,
        text,
        command,
        drivers_path=drivers,
        drivers_text=to_yaml(extra),
        drivers_command=shell_command(["kubectl", "apply", "--server-side", "-f", str(drivers)]),
        driver_names=tuple(str(d["metadata"]["name"]) for d in extra),
        deletions=deletions,
        node_labels=labels,
    )


_RELEASE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,51}[a-z0-9])?$")
"""Helm's release names (a label value too): what may go into the label selector."""
RELEASE_RECORDS = 8
"""How many ``status=deployed`` records are read at most (Helm keeps one; an interrupted upgrade may leave two)."""


async def deployed_release(gateway: Gateway, namespace: str, name: str) -> HelmRelease | None:
    """The deployed revision of Helm release ``name`` in ``namespace`` from Helm's release Secrets (None: there is
    none); ReleaseError when the name or the record cannot be read, ClusterError from the API (403 included)."""
    if not _RELEASE_NAME.match(name):
        raise ReleaseError(f"{printable(name)[:80]!r} is not a Helm release name")
    selector = f"owner=helm,name={name},status=deployed"
    secrets = await gateway.list_secrets(namespace, label_selector=selector, limit=RELEASE_RECORDS)

    def revision(secret: Mapping[str, Any]) -> int:
        label = str(((secret.get("metadata") or {}).get("labels") or {}).get("version") or "")
        return int(label) if label.isdigit() and len(label) < 10 else 0

    newest = max(secrets, key=revision, default=None)
    if newest is None:
        return None
    try:
        return decode_release(newest)
    except ReleaseError as exc:
        raise ReleaseError(f"Secret {namespace}/{printable(str(newest['metadata'].get('name')))}: {exc}") from None
