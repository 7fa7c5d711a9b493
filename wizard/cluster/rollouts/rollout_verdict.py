"""The rollout's verdict from what the follower's caches hold: a pure rule, no API call (:func:`classify`).

:mod:`wizard.cluster.rollouts.rollout` keeps the caches and calls it on every snapshot; the rules are here so they can be
read, and tested, on objects as the server holds them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from wizard.cluster.core.rollout_cache import PodStatus
from wizard.engine.facts import LABEL_DEPLOY_DRIVER
from wizard.engine.leftovers import Unwanted, stray_message
from wizard.engine.naming import DIGEST_PREFIX, image_path, image_tag, tag_version
from wizard.engine.operand_images import operand_images
from wizard.engine.plan import Plan
from wizard.engine.policy_health import FALSE_READY_REASONS, ready_condition
from wizard.engine.prior_findings import PriorFindings, cause, named
from wizard.engine.upgradestates import UPGRADE_FAILED

FATAL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"})
Phase = Literal["waiting", "progressing", "ready", "failed"]
KNOWN_FAILING = frozenset({"CrashLoopBackOff", "RunContainerError"})
"""The waiting reasons of a container that has failed at least once (its restart count is 1 or more): on a node with
a host finding from before apply, the failure that finding foretold."""
FOUND_BEFORE = "failed as found before apply"
"""How the failure of a rollout on nodes with a host finding from before apply begins."""
FALSE_READY_WAIT = "waiting for the operator's next pass"
"""How a ``ready`` with NoGPUNodes/NFDLabelsMissing over labelled GPU nodes is worded while it is waited out."""
HOST_DRIVER_FOUND = "no driver pod is wanted"
"""How the failure of a driver rollout onto hosts that already run a driver begins."""
RETRYING = "waiting for the upgrade controller to retry"
"""How a rollout over nodes already ``upgrade-failed`` when it began is worded while they are retried."""


@dataclass(frozen=True)
class DaemonSetStatus:
    """Rollout counters of one driver DaemonSet."""

    name: str
    desired: int
    ready: int
    updated: int
    image: str = ""
    """The driver container's image in the DaemonSet's pod template."""
    observed: bool = True
    """The DaemonSet controller has seen the latest template (``status.observedGeneration``)."""

    @property
    def done(self) -> bool:
        return self.observed and self.desired > 0 and self.ready == self.desired and self.updated == self.desired

    def runs(self, version: str) -> bool:
        """The template runs driver ``version`` (tag ``<version>-…`` or the digest itself)."""
        if not self.image or not version:
            return True  # nothing to compare (a DaemonSet without the driver container)
        if version.startswith(DIGEST_PREFIX):
            return self.image.endswith("@" + version)
        return "@" not in self.image and tag_version(image_tag(self.image)) == version


def classify(
    plan: Plan,
    policy: dict[str, Any] | None,
    state: str,
    daemonsets: list[DaemonSetStatus],
    pods: list[PodStatus],
    upgrade: dict[str, str],
    nvd: dict[str, str],
    operands: list[DaemonSetStatus],
    hosted: list[str] | None = None,
    fit: Callable[[str], int | None] | None = None,
    stray: list[Unwanted] | None = None,
    gpu_nodes: int = 0,
    failed_before: frozenset[str] = frozenset(),
    unplaced: Callable[[], tuple[int, str] | None] | None = None,
) -> tuple[Phase, str]:
    """The rollout's phase and its one-line reason from what the caches hold (a pure rule: no API call).

    ``unplaced``: the nodes the operator labelled for a driver pod (and an NVIDIADriver selects) that no driver
    DaemonSet places one on (never ready while one has no driver). ``stray``: driver DaemonSets the plan does not
    want that still run pods (never ready over one). ``gpu_nodes``:
    how many nodes carry a GPU label; a NoGPUNodes over such nodes is waited out (the follower bounds the wait).
    A pod waiting on an image the plan has moved elsewhere is the operator's to replace (:func:`replaced`), not the
    new rollout's failure. ``failed_before``: nodes already ``upgrade-failed`` when the follower began (an earlier
    rollout's failure, which this apply may be the fix of): the upgrade controller retries them once their new driver
    pod is ready, so they are waited on, not taken for this rollout's failure."""
    if policy is None:
        return "waiting", "no ClusterPolicy yet"
    fatal = [p for p in pods if p.reason in FATAL_WAITING]
    old = replaced(plan, policy, fatal)
    fatal = [p for p in fatal if p not in old]
    if fatal:
        first = fatal[0]
        return "failed", f"{first.name} on {first.node} ({first.container}): {first.reason}: {first.message}".rstrip(
            ": "
        )
    failed_nodes = sorted(n for n, s in upgrade.items() if s == UPGRADE_FAILED and n not in failed_before)
    retried = sorted(n for n, s in upgrade.items() if s == UPGRADE_FAILED and n in failed_before)
    if failed_nodes:
        return "failed", f"driver upgrade failed on {', '.join(failed_nodes)}"
    errors = [
        c
        for c in ((policy.get("status") or {}).get("conditions") or [])
        if c.get("type") == "Error" and c.get("status") == "True"
    ]
    if errors and errors[0].get("reason") == "ReconcileFailed":
        return "failed", f"ClusterPolicy: {errors[0].get('message') or 'reconcile failed'}"
    condition = ready_condition(policy)
    reason = str(condition.get("reason") or "")
    if state == "ready" and reason in FALSE_READY_REASONS:
        said = f"ClusterPolicy says ready, but {reason}: {condition.get('message') or ''}".rstrip(": ")
        if gpu_nodes:  # the real operator passes through it for a moment on nodes it labelled (the lane saw it)
            return "progressing", f"{FALSE_READY_WAIT} ({gpu_nodes} node(s) carry GPU labels): {said}"
        return "failed", said
    left = [u for u in stray or [] if not u.waits]
    if left:  # the operator never deletes it: waiting would wait for ever, and its pods hold the nodes
        return "failed", stray_message(left[0])
    crashing = [p for p in pods if p.reason == "CrashLoopBackOff"]
    if crashing:
        first = crashing[0]
        return "progressing", f"{first.name} on {first.node} ({first.container}) is restarting (CrashLoopBackOff)"
    pending = [d for d in daemonsets if not d.done]
    if old:
        first = old[0]
        return "progressing", (
            f"waiting for the operator to replace {first.name} on {first.node} ({first.container}: {first.reason} "
            f"on {first.image}, which the plan moves)"
        )
    if plan.driver_enabled:
        if not daemonsets:
            return "progressing", "waiting for the operator to create the driver DaemonSets"
        stale = [d for d in daemonsets if not d.runs(plan.driver.version)]
        if stale:  # the operator has not reconciled the new spec yet: the old pods' readiness proves nothing
            return "progressing", f"waiting for the operator to move {stale[0].name} to driver {plan.driver.version}"
        if hosted and all(d.observed and d.desired == 0 for d in daemonsets):
            # The driver manager found a working host driver and took these nodes out of the driver pods'
            # selector; with every driver DaemonSet wanting no pod, no driver pod will ever start.
            named = ", ".join(hosted[:3]) + (f" and {len(hosted) - 3} more" if len(hosted) > 3 else "")
            return "failed", (
                f"{HOST_DRIVER_FOUND}: the driver manager found a host driver on {named} "
                f"({LABEL_DEPLOY_DRIVER}=pre-installed); set mode: preinstalled to use it, or remove the host "
                f"driver and label the nodes {LABEL_DEPLOY_DRIVER}=true"
            )
        if pending:
            counts = ", ".join(f"{d.name} {d.ready}/{d.desired}" for d in pending)
            return "progressing", f"driver pods ready: {counts}"
        short = _short(daemonsets, fit)
        if short:
            return "progressing", f"driver pods ready: {short}"
        missing = unplaced() if unplaced else None
        if missing:  # the operator makes a driver DaemonSet per kernel or OS pool: one may not exist yet
            count, node = missing
            more = f" and {count - 1} more node(s)" if count > 1 else ""
            return "progressing", f"waiting for the operator to create a driver DaemonSet for {node}{more}"
        not_ready = sorted(name for name, s in nvd.items() if s != "ready")
        if not_ready:
            return "progressing", f"NVIDIADriver not ready yet: {', '.join(not_ready)}"
    if retried:
        which = ", ".join(retried[:3]) + (f" and {len(retried) - 3} more" if len(retried) > 3 else "")
        return "progressing", f"{RETRYING} {which} (upgrade-failed before this rollout began)"
    if stray:
        return "progressing", stray_message(stray[0])
    if state != "ready":
        return "progressing", f"ClusterPolicy {state or 'pending'}: {condition.get('message') or 'reconciling'}"
    # The operator counts a DaemonSet it has just created as ready (0 pods wanted until the DaemonSet
    # controller has looked at it) and may say ready for a moment; seen on the real operator, in the lane.
    unsettled = [d for d in operands if not d.observed or d.ready < d.desired]
    if unsettled:
        operand = unsettled[0]
        counts = f"{operand.ready}/{operand.desired} ready" if operand.observed else "not scheduled yet"
        return "progressing", f"ClusterPolicy ready, but {operand.name} is still rolling out ({counts})"
    short = _short(operands, fit)
    if short:  # the DaemonSet controller has not counted every node the operator labelled for it yet
        return "progressing", f"ClusterPolicy ready, but pods are still to be scheduled: {short}"
    total = sum(d.desired for d in daemonsets)
    if not plan.driver_enabled:
        return "ready", "ClusterPolicy ready"
    return "ready", f"ClusterPolicy ready; {total} driver pod{'s' if total != 1 else ''} ready"


CAUSES_SHOWN = 10
"""Nodes whose cause (finding and fix) a failure found before apply spells out; the message counts the rest."""


def known_failure(pods: list[PodStatus], prior: PriorFindings | None) -> tuple[str, tuple[str, ...]]:
    """The rollout's failure when a pod on a node with a host finding from before apply crash-loops or has restarted
    (restart count 1 or more): its one-line
    message and one cause per node (the finding and its fix); ``("", ())`` when there is none.

    Such a node needs no crash window (a driver on a sound host may restart once while it compiles): its host was
    found unfit before apply and the person went on despite it, so the first failure there is that finding's, and
    it is named with its fix instead of the pod's last log line."""
    if not prior:
        return "", ()
    nodes = sorted({p.node for p in pods if p.node in prior and (p.reason in KNOWN_FAILING or p.restarts)})
    if not nodes:
        return "", ()
    words = "; ".join(named(node, prior[node]) for node in nodes[:3])
    more = f"; and {len(nodes) - 3} more node(s)" if len(nodes) > 3 else ""
    message = f"{FOUND_BEFORE} (overridden) on {len(nodes)} node(s): {words}{more}"
    return message, tuple(cause(node, prior[node]) for node in nodes[:CAUSES_SHOWN])


def replaced(plan: Plan, policy: dict[str, Any], pods: list[PodStatus]) -> list[PodStatus]:
    """The ``pods`` that wait on another reference of an image the plan names (``nvcr.io/nvidia/gpu-operator:TAG``
    where the plan names ``harbor.corp.example/nvidia/gpu-operator:TAG``): pods of a template the operator has
    not rolled to the plan yet, which it replaces once it has (a rollout over a failed one would otherwise fail at
    once on the old pods' ImagePullBackOff, as the real-cluster lane saw). An image the plan does not name at all
    still fails the rollout."""
    if not pods:
        return []
    named = {o.reference for o in operand_images(plan, policy.get("spec") or {})}
    names = {_image_name(reference) for reference in named} | {plan.driver.image or "driver"}
    kept = spec_images(policy.get("spec") or {})  # what the live policy asks for: the operator keeps it
    return [
        p
        for p in pods
        if p.image
        and p.image not in named
        and p.image not in kept
        and not _driver_image_of(plan, p.image)
        and _image_name(p.image) in names
    ]


def spec_images(spec: Any, depth: int = 3) -> set[str]:
    """Every ``repository/image:version`` a ClusterPolicy spec names (its sections and their sub-sections, such as
    ``driver.manager``): a pod waiting on one of them waits on what the live policy asks for, which the operator
    never replaces (a chart whose appVersion is not the release names ``gpu-operator:main-latest`` there)."""
    found: set[str] = set()
    if not isinstance(spec, dict) or depth <= 0:
        return found
    repository, image, version = (str(spec.get(key) or "") for key in ("repository", "image", "version"))
    if repository and image and version:
        found.add(image_path(repository, image, version))
    for value in spec.values():
        found |= spec_images(value, depth - 1)
    return found


def _image_name(reference: str) -> str:
    """The image's own name: the last path component without tag or digest (``container-toolkit``)."""
    return reference.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def _driver_image_of(plan: Plan, image: str) -> bool:
    """``image`` is the plan's driver (its repository and version; any OS or kernel suffix)."""
    repository = plan.driver.repository.rstrip("/")
    if not repository or not image.startswith(repository + "/"):
        return False
    return DaemonSetStatus("", 0, 0, 0, image).runs(plan.driver.version)


def _short(daemonsets: list[DaemonSetStatus], fit: Callable[[str], int | None] | None) -> str:
    """The first DaemonSet that wants fewer pods than there are nodes for it, as ``name desired/nodes nodes``."""
    if fit is None:
        return ""
    for daemonset in daemonsets:
        nodes = fit(daemonset.name)
        if nodes is not None and daemonset.desired < nodes:
            return f"{daemonset.name} wants {daemonset.desired} of the {nodes} nodes it belongs on"
    return ""


def driver_wanted(plan: Plan, drivers: list[dict[str, Any]]) -> Callable[[dict[str, str]], bool]:
    """Whether a node's kept labels ask for a driver pod: the operator labelled it ``nvidia.com/gpu.deploy.driver=
    true`` and, in a plan with NVIDIADriver CRs, one of them selects it (a node no CR selects gets no driver)."""
    selectors = [dict(((d.get("spec") or {}).get("nodeSelector")) or {}) for d in drivers]

    def wanted(labels: dict[str, str]) -> bool:
        if labels.get(LABEL_DEPLOY_DRIVER) != "true":
            return False
        if not plan.driver.useNvidiaDriverCRD:
            return True
        # a selector on a label the slim nodes drop cannot be judged: such a node is not waited for
        return any(all(labels.get(k) == str(v) for k, v in s.items()) for s in selectors)

    return wanted
