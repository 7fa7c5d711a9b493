"""Driver DaemonSets a plan does not want, and which of them the GPU Operator leaves behind: a pure rule.

Read from the operator's source (``controllers/object_controls.go`` and ``state_manager.go``, the same in
v25.10, v26.3 and v26.7). The ClusterPolicy controller cleans up after most changes itself:

* driver enabled, precompiled: ``cleanupUnusedDriverDaemonSets`` deletes the ``nvidia-driver-daemonset*``
  DaemonSets labelled ``nvidia.com/precompiled=false`` (and ``cleanupStalePrecompiledDaemonsets`` the
  per-kernel ones no node wants any more);
* driver enabled, not precompiled: it deletes those labelled ``nvidia.com/precompiled=true``;
* ``useNvidiaDriverCRD``: ``step()`` deletes every driver DaemonSet the ClusterPolicy owns
  (``cleanupAllDriverDaemonSets``, its pods orphaned for the NVIDIADriver's rollout to replace).

It leaves two things behind:

* **driver disabled** (pre-installed): the state-disabled branch of ``DaemonSet()`` deletes only the asset's
  own name, ``nvidia-driver-daemonset``; the per-kernel precompiled DaemonSets
  (``nvidia-driver-daemonset-<kernel>-<os>``) keep their driver pods, with the ClusterPolicy ``ready``;
* **useNvidiaDriverCRD turned off**: the NVIDIADriver controller stops reconciling (state ``Disabled``) and
  deletes nothing; its ``nvidia-gpu-driver-*`` DaemonSets keep running beside the ClusterPolicy's new ones.
  Before that check existed (the release's ``nvidiaDriverCRDSwitch``: false for v25.10) the controller goes
  on reconciling every NVIDIADriver: deleting its DaemonSet would not last, the NVIDIADriver objects must go.

The cluster room gathers the live DaemonSets (:class:`LiveDaemonSet`) and deletes what :func:`left_behind`
names with the apply; the rollout and verification use :func:`unwanted` so that nothing is called ready
while a DaemonSet the plan does not want still runs driver pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wizard.engine import releases
from wizard.engine.operator_names import COMMON_DRIVER_DAEMONSET, DRIVER_SELECTOR
from wizard.engine.plan import Plan
from wizard.engine.upgradestates import UPGRADE_DONE

LABEL_COMPONENT, _, DRIVER_COMPONENT = DRIVER_SELECTOR.partition("=")
LABEL_PRECOMPILED = "nvidia.com/precompiled"

LEFT_WHEN_DISABLED = f"left by the operator when the driver is disabled (it deletes only {COMMON_DRIVER_DAEMONSET})"
LEFT_WHEN_CRD_OFF = (
    "left by the NVIDIADriver controller when useNvidiaDriverCRD is turned off (it stops reconciling and deletes "
    "nothing)"
)
REMOVED_BY_OPERATOR = "the operator removes it for this plan"
KEPT_WHEN_CRD_OFF = (
    "an NVIDIADriver runs it: this release's NVIDIADriver controller ignores useNvidiaDriverCRD: false (delete the "
    "NVIDIADriver objects: kubectl delete nvidiadrivers --all)"
)
KEPT_BY_NVIDIADRIVER = (
    "an NVIDIADriver runs it while the ClusterPolicy keeps useNvidiaDriverCRD: true (delete the NVIDIADriver "
    "objects, or set useNvidiaDriverCRD: false)"
)


@dataclass(frozen=True)
class LiveDaemonSet:
    """What the rule needs of one live DaemonSet in the operator's namespace."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    owner_kind: str = ""
    """The kind of its controlling owner (``ClusterPolicy``, ``NVIDIADriver``; "" for none)."""
    pods: int = 0
    """Pods it runs now (the DaemonSet controller's ``currentNumberScheduled`` or ``numberReady``)."""
    uid: str = ""


@dataclass(frozen=True)
class Unwanted:
    """A driver DaemonSet the plan does not want, and why it is there."""

    name: str
    reason: str
    left: bool
    """The operator will not delete it for this plan (``gpu-wizard apply`` does)."""
    pods: int = 0
    uid: str = ""
    waits: bool = False
    """The operator deletes it itself for this plan: a rollout waits for it (neither left nor waited for: an
    NVIDIADriver keeps it, which only deleting the NVIDIADriver objects ends)."""

    def deletion(self, namespace: str = "") -> str:
        """``delete DaemonSet <ns>/X, left by the operator when …`` (the Preview's and the confirmation's line)."""
        where = f"{namespace}/" if namespace else ""
        return f"delete DaemonSet {where}{self.name}, {self.reason}"


def is_driver_daemonset(daemonset: LiveDaemonSet) -> bool:
    """A driver DaemonSet of the ClusterPolicy or of an NVIDIADriver (the driver component's label, or the name)."""
    return (
        daemonset.labels.get(LABEL_COMPONENT) == DRIVER_COMPONENT
        or daemonset.name.startswith(COMMON_DRIVER_DAEMONSET)
        or daemonset.owner_kind == "NVIDIADriver"
    )


def unwanted(plan: Plan, live: Sequence[LiveDaemonSet], *, nvidia_driver_crd: bool | None = None) -> list[Unwanted]:
    """The live driver DaemonSets the plan does not want, in name order.

    ``nvidia_driver_crd`` is the ClusterPolicy's ``driver.useNvidiaDriverCRD`` once the plan is applied
    (default: the plan's); a pre-installed plan leaves that field as it was, so the caller passes the
    policy's.
    """
    crd = plan.driver.useNvidiaDriverCRD if nvidia_driver_crd is None else nvidia_driver_crd
    found = []
    for daemonset in sorted(live, key=lambda d: d.name):
        if not is_driver_daemonset(daemonset):
            continue
        verdict = _verdict(plan, daemonset, crd)
        if verdict is not None:
            reason, left = verdict
            waits = reason == REMOVED_BY_OPERATOR
            found.append(Unwanted(daemonset.name, reason, left, daemonset.pods, daemonset.uid, waits))
    return found


def left_behind(plan: Plan, live: Sequence[LiveDaemonSet], *, nvidia_driver_crd: bool | None = None) -> list[Unwanted]:
    """The driver DaemonSets the operator leaves behind for this plan: the apply deletes them."""
    return [u for u in unwanted(plan, live, nvidia_driver_crd=nvidia_driver_crd) if u.left]


def _verdict(plan: Plan, daemonset: LiveDaemonSet, crd: bool) -> tuple[str, bool] | None:
    """(reason, left behind) for a DaemonSet the plan does not want; None when it wants it."""
    if daemonset.owner_kind == "NVIDIADriver":
        if crd and plan.driver_enabled:
            return None
        if crd:  # pre-installed, but the NVIDIADriver controller still reconciles: deleting it would not last
            return KEPT_BY_NVIDIADRIVER, False
        if not releases.rules(plan.operator.bundle).nvidiaDriverCRDSwitch:
            return KEPT_WHEN_CRD_OFF, False
        return LEFT_WHEN_CRD_OFF, True
    if not daemonset.name.startswith(COMMON_DRIVER_DAEMONSET):
        return None  # a driver DaemonSet of someone else's (not the operator's naming): not the plan's to judge
    if crd:
        return REMOVED_BY_OPERATOR, False  # cleanupAllDriverDaemonSets
    if not plan.driver_enabled:
        if daemonset.name == COMMON_DRIVER_DAEMONSET:
            return REMOVED_BY_OPERATOR, False
        return LEFT_WHEN_DISABLED, True
    precompiled = daemonset.labels.get(LABEL_PRECOMPILED)
    if plan.precompiled:
        if precompiled == "true":
            return None
        # cleanupUnusedDriverDaemonSets selects nvidia.com/precompiled=false: one without the label stays
        return (REMOVED_BY_OPERATOR, False) if precompiled == "false" else (_unlabelled("false"), True)
    if precompiled == "true":
        return REMOVED_BY_OPERATOR, False
    return None


def made_again_by(policy: Mapping[str, object] | None, labels: Mapping[str, str]) -> bool:
    """Whether the operator makes a saved driver DaemonSet again by itself once ``policy`` (a saved ClusterPolicy) is
    back: a precompiled one under a precompiled policy. A rollback that re-creates it first races the operator,
    which deletes a precompiled DaemonSet that wants no pod yet (``cleanupStalePrecompiledDaemonsets``: the
    DaemonSet controller has not counted its nodes) and creates its own."""
    spec = (policy or {}).get("spec")
    driver = (spec.get("driver") if isinstance(spec, Mapping) else None) or {}
    if not isinstance(driver, Mapping):
        return False
    return (
        labels.get(LABEL_PRECOMPILED) == "true"
        and driver.get("enabled") is not False
        and driver.get("usePrecompiled") is True
        and not driver.get("useNvidiaDriverCRD")
    )


def _unlabelled(value: str) -> str:
    return f"left by the operator (it deletes only driver DaemonSets labelled {LABEL_PRECOMPILED}={value})"


def stray_message(stray: Unwanted) -> str:
    """Why a rollout is not ready over a driver DaemonSet the plan does not want that still runs pods."""
    pods = f"{stray.pods} driver pod{'s' if stray.pods != 1 else ''}"
    if stray.left:
        return f"DaemonSet {stray.name} still runs {pods}, {stray.reason}: run gpu-wizard apply again, which deletes it"
    if not stray.waits:
        return f"DaemonSet {stray.name} still runs {pods}: {stray.reason}"
    return f"waiting for DaemonSet {stray.name} to go ({pods}; {stray.reason})"


def stray_pod_hint(daemonset: str, namespace: str) -> str:
    """Verification's hint for a driver pod on a node meant to use its host driver, from the pod's DaemonSet."""
    if not daemonset or daemonset == COMMON_DRIVER_DAEMONSET:
        return "the ClusterPolicy must set driver.enabled: false"
    delete = f"kubectl delete daemonset -n {namespace} {daemonset}" if namespace else "delete it"
    if daemonset.startswith(COMMON_DRIVER_DAEMONSET):
        return (
            f"a leftover DaemonSet {daemonset} still runs driver pods, {LEFT_WHEN_DISABLED}: run gpu-wizard apply "
            f"again, which deletes it (or {delete})"
        )
    return (
        f"DaemonSet {daemonset} (an NVIDIADriver's) still runs driver pods: with useNvidiaDriverCRD: false gpu-wizard "
        f"apply deletes it; with it true, delete the NVIDIADriver objects (or {delete})"
    )


UNMARKED_STATES = frozenset({"", UPGRADE_DONE})
"""The upgrade states in which the operator's node labeller marks a node whose driver pod lost its owner
(``isDriverUpgradeRequestAllowed``, controllers/nodelabeling_controller.go, read in v26.7)."""


def unmarked_orphans(orphans: Mapping[str, str], upgrade_states: Mapping[str, str]) -> dict[str, str]:
    """Node -> its driver pod left without an owner, for the nodes the upgrade controller will not replace it on.

    With ``useNvidiaDriverCRD`` the ClusterPolicy deletes its driver DaemonSets orphaning their pods, and the
    NVIDIADriver's pods cannot start beside them (their anti-affinity). The operator's upgrade library replaces an
    orphaned pod only on a node marked ``upgrade-required``, which the operator's node labeller (read in v26.7)
    does when it reconciles after the pods lost their owner; it reconciles on a driver pod's creation or start, not
    on that loss, so when the NVIDIADriver's pods are created first the nodes stay ``upgrade-done`` and its pods
    ``Pending`` for good (seen on the real operator in the lane)."""
    return {node: pod for node, pod in sorted(orphans.items()) if upgrade_states.get(node, "") in UNMARKED_STATES}
