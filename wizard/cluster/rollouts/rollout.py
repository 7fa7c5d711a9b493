"""Follow a driver rollout after an apply until it is ready, has failed, or the caller stops it.

Everything is followed by watches, never by periodic full lists: the ClusterPolicy, the NVIDIADrivers,
the driver DaemonSets, the operator's pods and the nodes (their ``nvidia.com/`` labels and taints) each
live in a :class:`~wizard.cluster.core.watchcache.WatchCache` (one paged list, then a watch from its
resourceVersion, listed again on 410). A snapshot is computed from the caches whenever
an event arrives (and once a second for the clocks), so the API server sees a handful of long-lived
watches whatever the node count.

``ready`` needs the policy ready for a real reason (``NoGPUNodes`` and ``NFDLabelsMissing`` also
report ready), every driver DaemonSet fully rolled out and every other operand DaemonSet seen by the
DaemonSet controller with its pods ready (the operator's ``ready`` can pass over a DaemonSet it has just
created, which wants no pod yet), each wanting a pod on every node it belongs on
(:mod:`wizard.cluster.core.daemonset_fit`: the controller may count before it sees the operator's node labels).
That verdict is confirmed on fresh lists of the policies and DaemonSets (:func:`confirm_ready`: watches of
different kinds are not ordered with each other), and said only once it holds (:data:`QUIET_S`: the real operator
wrote notReady for one pass right after a confirmed ready, while its operands' pods still changed).
A driver DaemonSet the plan does not want that still runs pods keeps it from ``ready``: one the operator
removes itself is waited for, one it leaves behind (:mod:`wizard.engine.leftovers`) fails the rollout, naming
it. Driver DaemonSets that want no pod because the driver manager found a host driver on the nodes
(``nvidia.com/gpu.deploy.driver=pre-installed``) fail at once, naming the fix; an image that cannot be pulled, a
reconcile error or an upgrade-failed node ends it as ``failed``. Verdicts that real rollouts pass
through on their way (a driver container restarting while the module loads, a node waiting in a
state) are judged on time windows, not on samples: a container crash-looping for ``crash_window``
seconds, or nothing changing for ``stall_window`` seconds, fails the rollout. On a node whose host was found unfit
before apply (``prior``: nouveau, Secure Boot, a noexec folder…, overridden) the first crash loop fails it at once,
naming that finding (:func:`~wizard.cluster.rollouts.rollout_verdict.known_failure`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from wizard import collector
from wizard.cluster.core.caches import FeedView
from wizard.cluster.core.daemonset_fit import Placements
from wizard.cluster.core.leftover_sets import judge
from wizard.cluster.core.operator_status import SETTLE_S
from wizard.cluster.core.preflight import DRIVERS, POLICY, active_policy
from wizard.cluster.core.rollout_cache import PodStatus, slim_node, slim_pod, waiting_entries, without_managed_fields
from wizard.cluster.core.watchcache import WatchCache, stop_followers
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.rollouts.orphans import OrphanMarker
from wizard.cluster.rollouts.rollout_verdict import (
    FALSE_READY_WAIT,
    HOST_DRIVER_FOUND,
    DaemonSetStatus,
    Phase,
    classify,
    driver_wanted,
    known_failure,
)
from wizard.engine import steps
from wizard.engine.facts import LABEL_DEPLOY_DRIVER, LABEL_GPU_PRESENT, LABEL_UPGRADE_STATE, PCI_NVIDIA_LABELS
from wizard.engine.operator_names import DRIVER_CONTAINER, DRIVER_SELECTOR
from wizard.engine.plan import Plan
from wizard.engine.prior_findings import PriorFindings
from wizard.engine.upgrade import plan_policy
from wizard.engine.upgradestates import UPGRADE_FAILED, duration_text, stuck_nodes

if TYPE_CHECKING:
    from wizard.cluster.core.discovery import SessionNode
    from wizard.cluster.core.session import Session

SNAPSHOT_GAP = 0.25
"""Seconds at least between two snapshots (at most ``interval``): front ends show a few a second."""
GPU_LABEL_KEYS = (LABEL_GPU_PRESENT, *PCI_NVIDIA_LABELS)
"""A node carrying one of these (``true``) is a GPU node to the operator too: its NoGPUNodes over it is a moment."""
FALSE_READY_S = 30.0
"""How long a ``ready`` with NoGPUNodes over labelled GPU nodes is waited out before it is the failure it says."""
QUIET_S = 3.0
"""A confirmed ready is said once nothing the follower watches has changed for this long (or it has held for
:data:`~wizard.cluster.core.operator_status.SETTLE_S`): the real operator wrote notReady for one pass one second after a
confirmed ready, while the operands' pods were still changing (docs/real-cluster.md), and a ready that the next
look contradicts is no ready."""


@dataclass(frozen=True)
class RolloutStatus:
    """One snapshot of the rollout."""

    phase: Phase
    message: str
    policy_state: str = ""
    conditions: list[dict[str, Any]] = field(default_factory=list)
    daemonsets: list[DaemonSetStatus] = field(default_factory=list)
    upgrade_states: dict[str, str] = field(default_factory=dict)
    """Node -> ``nvidia.com/gpu-driver-upgrade-state`` for nodes that carry it."""
    pods: list[PodStatus] = field(default_factory=list)
    nvidia_drivers: dict[str, str] = field(default_factory=dict)
    """NVIDIADriver name -> state."""
    elapsed: float = 0.0
    time_in_state: dict[str, float] = field(default_factory=dict)
    """Node -> seconds in its current upgrade state (as seen by this follower)."""
    causes: tuple[str, ...] = ()
    """A failure found before apply: per node, the host finding gone on despite and its fix (one line each)."""

    @property
    def done(self) -> bool:
        return self.phase in ("ready", "failed")

    @property
    def fix_step(self) -> str:
        """The step whose answers change the plan to fix this failure (the mode, for hosts that run a driver)."""
        hosts_run_a_driver = self.phase == "failed" and self.message.startswith(HOST_DRIVER_FOUND)
        return steps.MODE.name if hosts_run_a_driver else steps.DRIVER.name


@dataclass
class Followed:
    """The caches one rollout follows."""

    policies: WatchCache[Any] | FeedView[Any]
    """The session's (:class:`~wizard.cluster.core.caches.FeedView`) when the follower runs in one, as are the nodes."""
    drivers: WatchCache[Any] | None
    daemonsets: WatchCache[Any]
    nodes: WatchCache[Any] | FeedView[Any]
    """Every node: its upgrade state, the operator's deploy labels, what places DaemonSet pods on it."""
    pods: WatchCache[Any]

    def all(self) -> list[WatchCache[Any] | FeedView[Any]]:
        return [c for c in (self.policies, self.drivers, self.daemonsets, self.nodes, self.pods) if c is not None]


def scheduling(node: SessionNode) -> dict[str, Any]:
    """What the follower reads of a node the session keeps (:func:`~wizard.cluster.core.rollout_cache.slim_node`)."""
    return node.scheduling


def snapshot(followed: Followed, plan: Plan, started: float, clock: UpgradeClock) -> RolloutStatus:
    """Classify what the caches hold now (no API call)."""
    policy = active_policy(followed.policies.items())
    drivers = followed.drivers.items() if followed.drivers is not None else []
    state = str(((policy or {}).get("status") or {}).get("state") or "")
    ds_status = [_counters(d) for d in followed.daemonsets.items() if _is_driver_daemonset(d)]
    nodes = followed.nodes.items()
    upgrade = {
        n["metadata"]["name"]: str(n["labels"][LABEL_UPGRADE_STATE])
        for n in nodes
        if LABEL_UPGRADE_STATE in n["labels"]
    }
    hosted = sorted(
        str(n["metadata"]["name"]) for n in nodes if n["labels"].get(LABEL_DEPLOY_DRIVER) == "pre-installed"
    )
    by_name = {d["metadata"]["name"]: d for d in followed.daemonsets.items()}

    grouped: Placements | None = None

    def fit(name: str) -> int | None:  # asked only once the rest says ready: then the nodes are grouped, once
        nonlocal grouped
        if name not in by_name:
            return None
        grouped = grouped or Placements(nodes)
        return grouped.nodes_to_run(by_name[name])

    def unplaced() -> tuple[int, str] | None:  # asked only once the driver DaemonSets say ready
        nonlocal grouped
        grouped = grouped or Placements(nodes)
        return grouped.unplaced(
            [d for d in followed.daemonsets.items() if _is_driver_daemonset(d)], driver_wanted(plan, drivers)
        )

    pods: list[PodStatus] = followed.pods.indexed_items()
    operands = [_counters(d) for d in followed.daemonsets.items() if _is_operand(d) and not _is_driver_daemonset(d)]
    nvd = {d["metadata"]["name"]: str((d.get("status") or {}).get("state") or "") for d in drivers}
    now = time.monotonic()
    clock.observe(upgrade, pods, now)
    stray = [u for u in judge(plan, followed.daemonsets.items(), policy) if u.pods]
    gpu_nodes = sum(1 for n in nodes if any(n["labels"].get(key) == "true" for key in GPU_LABEL_KEYS))
    phase, message = classify(
        plan,
        policy,
        state,
        ds_status,
        pods,
        upgrade,
        nvd,
        operands,
        hosted,
        fit,
        stray,
        gpu_nodes=gpu_nodes,
        unplaced=unplaced,
        failed_before=frozenset(clock.failed_before or ()),
    )
    conditions = list(((policy or {}).get("status") or {}).get("conditions") or [])
    return RolloutStatus(
        phase,
        message,
        state,
        conditions,
        ds_status,
        upgrade,
        pods,
        nvd,
        now - started,
        {node: round(now - since, 1) for node, (_, since) in clock.states.items()},
    )


def _counters(daemonset: dict[str, Any]) -> DaemonSetStatus:
    status = daemonset.get("status") or {}
    return DaemonSetStatus(
        daemonset["metadata"]["name"],
        int(status.get("desiredNumberScheduled") or 0),
        int(status.get("numberReady") or 0),
        int(status.get("updatedNumberScheduled") or 0),
        _driver_image(daemonset),
        int(status.get("observedGeneration") or 0) >= int((daemonset.get("metadata") or {}).get("generation") or 0),
    )


def _is_operand(daemonset: dict[str, Any]) -> bool:
    """A DaemonSet the operator made for a ClusterPolicy (not NFD's, not the wizard's own probe)."""
    refs = (daemonset.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("kind") in ("ClusterPolicy", "NVIDIADriver") for r in refs)


def _driver_image(daemonset: dict[str, Any]) -> str:
    containers = ((((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return next((str(c.get("image") or "") for c in containers if c.get("name") == DRIVER_CONTAINER), "")


def _is_driver_daemonset(daemonset: dict[str, Any]) -> bool:
    labels = (daemonset.get("metadata") or {}).get("labels") or {}
    key, _, value = DRIVER_SELECTOR.partition("=")
    return labels.get(key) == value


class UpgradeClock:
    """When each node entered its upgrade state, and since when each container has been crash-looping."""

    def __init__(self, *, after_change: bool = True) -> None:
        self.states: dict[str, tuple[str, float]] = {}
        self.crashing: dict[tuple[str, str], float] = {}
        # following what runs, with no change sent (the TUI arriving at Apply): an upgrade-failed node is the news
        self.failed_before: set[str] | None = None if after_change else set()
        """Nodes ``upgrade-failed`` at the first snapshot and ever since (None before it): an earlier rollout's
        failure, not this one's; a node that leaves the state and fails again is this rollout's."""

    def observe(self, upgrade: dict[str, str], pods: list[PodStatus], now: float) -> None:
        if self.failed_before is None:
            self.failed_before = {node for node, state in upgrade.items() if state == UPGRADE_FAILED}
        else:
            self.failed_before &= {node for node, state in upgrade.items() if state == UPGRADE_FAILED}
        for node, state in upgrade.items():
            if self.states.get(node, ("", 0.0))[0] != state:
                self.states[node] = (state, now)
        for node in set(self.states) - set(upgrade):
            del self.states[node]
        looping = {(p.name, p.container) for p in pods if p.reason == "CrashLoopBackOff"}
        for key in looping:
            self.crashing.setdefault(key, now)
        for key in set(self.crashing) - looping:
            del self.crashing[key]

    def crash_looping_for(self, window: float, now: float) -> tuple[str, str] | None:
        """A container that has been crash-looping for at least ``window`` seconds, if any."""
        for key, since in sorted(self.crashing.items(), key=lambda item: item[1]):
            if now - since >= window:
                return key
        return None


def stalled_message(status: RolloutStatus, stall: float) -> str:
    """Why a rollout with no change for ``stall`` seconds failed: where it stopped, and the nodes longest in one state."""
    stuck = stuck_nodes(status.upgrade_states, status.time_in_state, 0.0)[:3]
    named = ", ".join(f"{n.node} in {n.state} for {duration_text(n.seconds)}" for n in stuck)
    where = f"; longest in one upgrade state: {named}" if named else ""
    return f"stalled for {stall:g}s: {status.message}{where}"


async def _crash_message(gateway: Gateway, namespace: str, pod: PodStatus) -> str:
    log = ""
    for previous in (True, False):
        with contextlib.suppress(ClusterError):
            log = log or await gateway.read_log(namespace, pod.name, pod.container, tail_lines=5, previous=previous)
    last = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "")
    return f"{pod.name} on {pod.node} ({pod.container}) keeps failing" + (f": {last}" if last else "")


async def confirm_ready(followed: Followed, plan: Plan, started: float, clock: UpgradeClock) -> RolloutStatus:
    """The ready verdict again, on fresh lists of the policies, NVIDIADrivers and DaemonSets (a few objects).

    Watches of different kinds are not ordered with each other: the policy's ``ready`` can arrive before the
    DaemonSets the operator created just before writing it, and the operator counts a DaemonSet its own cache
    does not hold yet as ready. A list sent after that ``ready`` arrived holds every DaemonSet created before
    it; seen on the real operator (docs/real-cluster.md). Nodes and pods stay as their caches hold them."""
    listed = {"policies": followed.policies, "drivers": followed.drivers, "daemonsets": followed.daemonsets}
    fresh: dict[str, WatchCache[Any]] = {
        kind: WatchCache(
            cache.gateway,
            cache.resource,
            namespace=cache.namespace,
            label_selector=cache.label_selector,
            slim=cache.slim,
        )
        for kind, cache in listed.items()
        if cache is not None
    }
    await asyncio.gather(*(cache.relist(report=False) for cache in fresh.values()))
    return snapshot(replace(followed, **fresh), plan, started, clock)


async def _held_ready(
    status: RolloutStatus,
    followed: Followed,
    plan: Plan,
    started: float,
    clock: UpgradeClock,
    ready_since: float | None,
) -> tuple[RolloutStatus, float | None]:
    """A ready snapshot judged again: ``ready`` once it is confirmed on fresh lists and has held (nothing watched
    changed for :data:`QUIET_S`, or it has stayed ready for :data:`SETTLE_S`); until then ``progressing`` with
    that in words. Returns the status and since when it has been ready (None: it is not)."""
    now = time.monotonic()
    quiet = now - max(cache.last_change for cache in followed.all()) >= QUIET_S
    held = quiet or (ready_since is not None and now - ready_since >= SETTLE_S)
    if ready_since is None or held:  # fresh lists when it turns ready and when it is said: a few objects each
        status = await confirm_ready(followed, plan, started, clock)
        if status.phase != "ready":
            return status, None
        if held:
            return status, ready_since or now
    words = f"{status.message}; making sure it holds (ready once nothing has changed for {QUIET_S:g} s)"
    return replace(status, phase="progressing", message=words), ready_since or now


async def follow(
    gateway: Gateway,
    plan: Plan,
    namespace: str,
    *,
    interval: float = 1.0,
    timeout: float = 1800.0,
    crash_window: float = 300.0,
    stall_window: float | None = None,
    heartbeat: float | None = None,
    session: Session | None = None,
    prior: PriorFindings | None = None,
    after_change: bool = True,
) -> AsyncGenerator[RolloutStatus, None]:
    """Yield a snapshot whenever it changes (and at least every ``heartbeat`` seconds, for the clocks
    of time in state), until ready, failed or ``timeout`` seconds.

    Wakes on watch events, and every ``interval`` seconds for the clocks. A container crash-looping
    for ``crash_window`` seconds ends the rollout as failed, quoting its last log line (a driver
    container restarting during a normal upgrade recovers well within it). Nothing changing for
    ``stall_window`` seconds (default: the whole ``timeout``) ends it as failed, naming where it stopped
    and the nodes longest in one upgrade state. ``session``: the nodes and ClusterPolicies are read
    from its watches (listed and watched once for the session), else from caches of the follower's own.
    ``prior``: the host findings known before apply, per node; a container crash-looping on such a node ends the
    rollout at once, naming the finding and its fix (no crash window: the host was found unfit before).
    """
    started = time.monotonic()
    changed = asyncio.Event()
    followed = Followed(
        policies=FeedView(session.policy_feed(), changed)
        if session is not None
        else WatchCache(gateway, POLICY, changed, slim=without_managed_fields),
        drivers=WatchCache(gateway, DRIVERS, changed, slim=without_managed_fields)
        if plan.driver.useNvidiaDriverCRD
        else None,
        daemonsets=WatchCache(gateway, "daemonsets", changed, namespace=namespace, slim=without_managed_fields),
        nodes=FeedView(session.nodes.feed, changed, scheduling)
        if session is not None
        else WatchCache(gateway, "nodes", changed, slim=slim_node),
        pods=WatchCache(gateway, "pods", changed, namespace=namespace, slim=slim_pod, index=waiting_entries),
    )
    tasks = [asyncio.create_task(cache.run()) for cache in followed.all()]
    clock = UpgradeClock(after_change=after_change)
    orphans = OrphanMarker(gateway) if plan.driver.useNvidiaDriverCRD else None
    ready_since: float | None = None
    false_ready_since = 0.0
    last: tuple[Any, ...] | None = None
    last_change = last_yield = started
    stall = timeout if stall_window is None else stall_window
    # the caches of 5,000 nodes and pods are long-lived: collections skip them (wizard.collector)
    with collector.frozen():
        try:
            listed: asyncio.Future[Any] = asyncio.gather(*(cache.listed.wait() for cache in followed.all()))
            waiting: list[asyncio.Future[Any]] = [*tasks, listed]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not listed.done():
                listed.cancel()
            while True:
                for task in tasks:
                    if task.done():
                        task.result()  # a cache gave up: raise its error
                changed.clear()
                status = snapshot(followed, plan, started, clock)
                if orphans is not None and not status.done:
                    await orphans.mark(followed.pods.items(), status.upgrade_states)
                    if said := orphans.words():
                        status = replace(status, message=f"{status.message}; {said}")
                if status.phase == "ready":
                    status, ready_since = await _held_ready(status, followed, plan, started, clock, ready_since)
                else:
                    ready_since = None
                now = time.monotonic()
                if status.message.startswith(FALSE_READY_WAIT):
                    false_ready_since = false_ready_since or now
                    if now - false_ready_since >= FALSE_READY_S:
                        said = status.message.split("): ", 1)[-1]
                        status = replace(status, phase="failed", message=f"{said} (for {FALSE_READY_S:g} s)")
                else:
                    false_ready_since = 0.0
                foretold, causes = known_failure(status.pods, prior) if not status.done else ("", ())
                if foretold:
                    status = replace(status, phase="failed", message=foretold, causes=causes)
                looping = clock.crash_looping_for(crash_window, now) if not status.done else None
                if looping is not None:
                    pod = next(p for p in status.pods if (p.name, p.container) == looping)
                    status = replace(status, phase="failed", message=await _crash_message(gateway, namespace, pod))
                key = (
                    status.phase,
                    status.message,
                    status.policy_state,
                    tuple(status.daemonsets),
                    tuple(status.pods),
                    tuple(sorted(status.upgrade_states.items())),
                )
                if key != last or status.done:
                    last, last_change, last_yield = key, now, now
                    # the snapshot (every node read) and the front end's drawing of it each take a turn of their
                    # own: together they were one turn of 60-70 ms of the loop's CPU at 5,000 nodes
                    await asyncio.sleep(0)
                    yield status
                elif heartbeat is not None and now - last_yield >= heartbeat:
                    last_yield = now
                    yield status
                if status.done:
                    return
                if status.elapsed > timeout:
                    yield replace(status, phase="failed", message=f"not ready after {timeout:g}s: {status.message}")
                    return
                if now - last_change > stall:
                    yield replace(status, phase="failed", message=stalled_message(status, stall))
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), interval)
                # Events come in bursts and a snapshot reads every node (thousands of them): take one at most every
                # SNAPSHOT_GAP, letting the caches take in the rest of the burst meanwhile.
                await asyncio.sleep(max(0.0, now + min(SNAPSHOT_GAP, interval) - time.monotonic()))
        finally:
            await stop_followers(tasks)


async def follow_cluster(
    session: Session,
    plan: Plan,
    *,
    interval: float,
    timeout: float,
    crash_window: float,
    stall_window: float | None,
    heartbeat: float | None,
    prior: PriorFindings | None = None,
    after_change: bool = True,
) -> AsyncGenerator[RolloutStatus, None]:
    """:func:`follow` in the plan's operator namespace (see ``Cluster.rollout``); without a ``stall_window``, a
    plan that sets its upgradePolicy gives one from its timeouts."""
    if stall_window is None:
        policy = plan_policy(plan)
        stall_window = policy.stall_seconds() if policy is not None else None
    namespace = await session.namespace(plan)
    statuses = follow(
        session.gateway,
        plan,
        namespace,
        interval=interval,
        timeout=timeout,
        crash_window=crash_window,
        stall_window=stall_window,
        heartbeat=heartbeat,
        session=session,
        prior=prior,
        after_change=after_change,
    )
    async with contextlib.aclosing(statuses):
        async for status in statuses:
            yield status
