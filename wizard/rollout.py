"""Follow a driver rollout after an apply until it is ready, has failed, or the caller stops it.

Each poll reads the ClusterPolicy's state and conditions, the NVIDIADrivers, the driver
DaemonSets (desired / ready / updated), the per-node upgrade state label and the driver pods'
waiting reasons. ``ready`` needs the policy ready for a real reason (``NoGPUNodes`` and
``NFDLabelsMissing`` also report ready) and every driver DaemonSet fully rolled out; an image that
cannot be pulled, a crash loop, a reconcile error or an upgrade-failed node ends it as ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from wizard.errors import ClusterError
from wizard.facts import LABEL_UPGRADE_STATE
from wizard.gateway import Gateway, Gone
from wizard.plan import Plan
from wizard.preflight import DRIVERS, POLICY, active_policy
from wizard.retry import Reconnects

DRIVER_SELECTOR = "app.kubernetes.io/component=nvidia-driver"
DRIVER_CONTAINER = "nvidia-driver-ctr"
FALSE_READY_REASONS = frozenset({"NoGPUNodes", "NFDLabelsMissing"})
FATAL_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError"})
PROBE_PREFIX = "gpu-wizard-probe-"

Phase = Literal["waiting", "progressing", "ready", "failed"]


@dataclass(frozen=True)
class DaemonSetStatus:
    """Rollout counters of one driver DaemonSet."""

    name: str
    desired: int
    ready: int
    updated: int

    @property
    def done(self) -> bool:
        return self.desired > 0 and self.ready == self.desired and self.updated == self.desired


@dataclass(frozen=True)
class PodStatus:
    """One operand container that is waiting (image pull, crash loop…)."""

    name: str
    node: str
    phase: str
    reason: str = ""
    message: str = ""
    container: str = ""


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

    @property
    def done(self) -> bool:
        return self.phase in ("ready", "failed")


def ready_condition(obj: dict[str, Any] | None) -> dict[str, Any]:
    """The ``Ready`` condition of a ClusterPolicy or NVIDIADriver ({} when absent)."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {})


def waiting_pods(pod: dict[str, Any]) -> list[PodStatus]:
    """The containers of one pod that wait for a reason worth showing (not the normal start-up)."""
    meta, status = pod["metadata"], pod.get("status") or {}
    if str(meta.get("name") or "").startswith(PROBE_PREFIX):
        return []
    node, phase = str((pod.get("spec") or {}).get("nodeName") or ""), str(status.get("phase") or "")
    out = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason and reason not in ("PodInitializing", "ContainerCreating"):
            out.append(
                PodStatus(
                    meta["name"], node, phase, reason, str(waiting.get("message") or ""), str(cs.get("name") or "")
                )
            )
    return out


class PodWatch:
    """The waiting operand containers of a namespace, kept current by one paged list and then a watch.

    Listing every pod at each poll would cost the API server a full serialisation of thousands of
    pods per second on a large cluster; a watch sends only what changed.
    """

    def __init__(self, gateway: Gateway, namespace: str) -> None:
        self.gateway = gateway
        self.namespace = namespace
        self.waiting: dict[str, list[PodStatus]] = {}
        self.listed = asyncio.Event()

    def pods(self) -> list[PodStatus]:
        """Every waiting container now, by pod name."""
        return [entry for name in sorted(self.waiting) for entry in self.waiting[name]]

    def _update(self, kind: str, pod: dict[str, Any]) -> None:
        name = str(pod["metadata"].get("name") or "")
        entries = [] if kind == "DELETED" else waiting_pods(pod)
        if entries:
            self.waiting[name] = entries
        else:
            self.waiting.pop(name, None)

    async def run(self) -> None:
        """List, then follow the watch; list again when it expires (410). Runs until cancelled."""
        reconnects = Reconnects()
        while True:
            try:
                self.waiting.clear()
                rv = ""
                async with contextlib.aclosing(self.gateway.pod_pages(self.namespace)) as pages:
                    async for items, page_rv in pages:
                        rv = page_rv
                        for pod in items:
                            self._update("ADDED", pod)
                self.listed.set()
                while True:
                    async with contextlib.aclosing(self.gateway.watch_pods(self.namespace, rv)) as events:
                        async for kind, obj in events:
                            rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                            if kind in ("ADDED", "MODIFIED", "DELETED"):
                                self._update(kind, obj)
                            reconnects.progressed()
            except Gone:
                continue
            except ClusterError as exc:
                await reconnects.failed(exc)


async def snapshot(
    gateway: Gateway, plan: Plan, namespace: str, started: float, pods: list[PodStatus]
) -> RolloutStatus:
    """Read the policy, NVIDIADrivers, driver DaemonSets and upgrade states once; classify with ``pods``."""
    policy = active_policy(await gateway.list_custom(*POLICY))
    drivers = await gateway.list_custom(*DRIVERS) if plan.driver.useNvidiaDriverCRD else []
    daemonsets = await gateway.list_daemonsets(namespace, label_selector=DRIVER_SELECTOR)
    upgrading = await gateway.list_nodes_page(label_selector=LABEL_UPGRADE_STATE)
    state = str(((policy or {}).get("status") or {}).get("state") or "")
    ds_status = [
        DaemonSetStatus(
            d["metadata"]["name"],
            int((d.get("status") or {}).get("desiredNumberScheduled") or 0),
            int((d.get("status") or {}).get("numberReady") or 0),
            int((d.get("status") or {}).get("updatedNumberScheduled") or 0),
        )
        for d in daemonsets
    ]
    upgrade = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(LABEL_UPGRADE_STATE, "")
        for n in upgrading.get("items") or []
    }
    nvd = {d["metadata"]["name"]: str((d.get("status") or {}).get("state") or "") for d in drivers}
    phase, message = _classify(plan, policy, state, ds_status, pods, upgrade, nvd)
    conditions = list(((policy or {}).get("status") or {}).get("conditions") or [])
    return RolloutStatus(phase, message, state, conditions, ds_status, upgrade, pods, nvd, time.monotonic() - started)


def _classify(
    plan: Plan,
    policy: dict[str, Any] | None,
    state: str,
    daemonsets: list[DaemonSetStatus],
    pods: list[PodStatus],
    upgrade: dict[str, str],
    nvd: dict[str, str],
) -> tuple[Phase, str]:
    if policy is None:
        return "waiting", "no ClusterPolicy yet"
    fatal = [p for p in pods if p.reason in FATAL_WAITING]
    if fatal:
        first = fatal[0]
        return "failed", f"{first.name} on {first.node} ({first.container}): {first.reason}: {first.message}".rstrip(
            ": "
        )
    failed_nodes = sorted(n for n, s in upgrade.items() if s == "upgrade-failed")
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
        return "failed", f"ClusterPolicy says ready, but {reason}: {condition.get('message') or ''}".rstrip(": ")
    crashing = [p for p in pods if p.reason == "CrashLoopBackOff"]
    if crashing:
        first = crashing[0]
        return "progressing", f"{first.name} on {first.node} ({first.container}) is crash-looping"
    pending = [d for d in daemonsets if not d.done]
    if plan.driver_enabled:
        if not daemonsets:
            return "progressing", "waiting for the operator to create the driver DaemonSets"
        if pending:
            counts = ", ".join(f"{d.name} {d.ready}/{d.desired}" for d in pending)
            return "progressing", f"driver pods ready: {counts}"
        not_ready = sorted(name for name, s in nvd.items() if s != "ready")
        if not_ready:
            return "progressing", f"NVIDIADriver not ready yet: {', '.join(not_ready)}"
    if state != "ready":
        return "progressing", f"ClusterPolicy {state or 'pending'}: {condition.get('message') or 'reconciling'}"
    total = sum(d.desired for d in daemonsets)
    if not plan.driver_enabled:
        return "ready", "ClusterPolicy ready"
    return "ready", f"ClusterPolicy ready; {total} driver pod{'s' if total != 1 else ''} ready"


async def _crash_message(gateway: Gateway, namespace: str, pod: PodStatus) -> str:
    log = ""
    for previous in (True, False):
        with contextlib.suppress(ClusterError):
            log = log or await gateway.read_log(namespace, pod.name, pod.container, tail_lines=5, previous=previous)
    last = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "")
    return f"{pod.name} on {pod.node} ({pod.container}) keeps failing" + (f": {last}" if last else "")


async def follow(
    gateway: Gateway, plan: Plan, namespace: str, *, interval: float = 1.0, timeout: float = 1800.0
) -> AsyncGenerator[RolloutStatus, None]:
    """Yield a snapshot whenever it changes, until ready, failed or ``timeout`` seconds.

    A crash loop seen in two polls in a row ends the rollout as failed (a single one may be a
    container restarting while the driver loads); the message quotes the container's last log line.
    """
    started = time.monotonic()
    last: tuple[Any, ...] | None = None
    crashing_before: set[tuple[str, str]] = set()
    pods = PodWatch(gateway, namespace)
    watcher = asyncio.create_task(pods.run())
    try:
        listed = asyncio.create_task(pods.listed.wait())
        await asyncio.wait([watcher, listed], return_when=asyncio.FIRST_COMPLETED)
        listed.cancel()
        while True:
            if watcher.done():
                watcher.result()  # the pod watch gave up: raise its error
            status = await snapshot(gateway, plan, namespace, started, pods.pods())
            crashing = {(p.name, p.container) for p in status.pods if p.reason == "CrashLoopBackOff"}
            repeated = [p for p in status.pods if (p.name, p.container) in crashing & crashing_before]
            crashing_before = crashing
            if repeated and not status.done:
                status = replace(status, phase="failed", message=await _crash_message(gateway, namespace, repeated[0]))
            key = (
                status.phase,
                status.message,
                status.policy_state,
                tuple(status.daemonsets),
                tuple(status.pods),
                tuple(sorted(status.upgrade_states.items())),
            )
            if key != last or status.done:
                last = key
                yield status
            if status.done:
                return
            if status.elapsed > timeout:
                yield replace(status, phase="failed", message=f"not ready after {timeout:g}s: {status.message}")
                return
            await asyncio.sleep(interval)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, ClusterError):
            await watcher
