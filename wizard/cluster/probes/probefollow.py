"""Following one host probe DaemonSet's pods by watch: each node's :class:`HostRun` as its pod answers.

:func:`wizard.cluster.probes.hostprobe.run_on_hosts` creates the DaemonSet; this module reads what its pods
leave behind. The watch starts at the DaemonSet's creation (every pod of the run comes after it; a
list only after the watch expired), decodes only the events that can settle a node (:func:`undecided`:
a substring test on the raw line), and keeps no settled pod. A node is settled by its pod's result
(the probe's termination message, :func:`~wizard.cluster.probes.probeset.read_message`) or by why the pod
cannot run (image pull, unschedulable, ended); when the run's deadline passes, the nodes without a
result get one saying what their pod was still doing. The pods are followed by the one watch cache
(:class:`wizard.cluster.core.watchcache.WatchCache`, keeping nothing: a settled pod is forgotten), as discovery
and the rollout's caches are.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.cluster.core.watchcache import WatchCache
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.probes.probe import _FAILED_WAITING
from wizard.cluster.probes.probeset import PROBE_CONTAINER, RUN_LABEL, read_message
from wizard.engine.nodescript import Step, StepResult

_IMAGE_HINT = "the probe image {image} must be pullable on the node; pass --probe-image with a mirrored copy"


@dataclass(frozen=True)
class HostRun:
    """What the steps gave on one node's host, or why they could not run there."""

    node: str
    results: list[StepResult] = field(default_factory=list)
    """One per step, in the steps' order (empty when ``error`` is set)."""
    error: str = ""
    """Why the probe could not run on the node ("" when it ran)."""
    hint: str = ""
    truncated: list[str] = field(default_factory=list)
    """``check: kept of total bytes`` of each step whose output was cut to fit the probe's result."""

    @property
    def ran(self) -> bool:
        return not self.error

    def cut(self) -> dict[str, str]:
        """check -> ``kept of total bytes`` of each step whose output was cut (from :attr:`truncated`)."""
        return {check: detail for check, _, detail in (entry.rpartition(": ") for entry in self.truncated) if check}

    def by_check(self, steps: Sequence[Step]) -> dict[str, StepResult]:
        """The results keyed by each step's check name."""
        return {step.check: result for step, result in zip(steps, self.results, strict=True)}


def _pod_node(pod: Mapping[str, Any]) -> str:
    """The node a DaemonSet pod is for: ``spec.nodeName``, else its node-affinity pin."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expr in term.get("matchFields") or []:
            values = expr.get("values") or []
            if expr.get("key") == "metadata.name" and len(values) == 1:
                return str(values[0])
    return ""


def pod_outcome(pod: Mapping[str, Any], node: str, steps: Sequence[Step], image: str) -> HostRun | None:
    """The node's :class:`HostRun` once its pod has an answer (a result, or why it cannot start); else None."""
    status = pod.get("status") or {}
    for cs in status.get("initContainerStatuses") or []:
        if cs.get("name") != PROBE_CONTAINER:
            continue
        state = cs.get("state") or {}
        done = state.get("terminated") or (cs.get("lastState") or {}).get("terminated")
        if done:
            message = read_message(str(done.get("message") or ""), steps)
            if message.error:
                why = f"{message.error}; the probe exited {done.get('exitCode')}"
                return HostRun(
                    node, error=why, hint="see the probe pod's log: kubectl logs -c probe", truncated=message.truncated
                )
            return HostRun(node, results=message.results, truncated=message.truncated)
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _FAILED_WAITING:
            why = f"probe pod cannot start ({waiting.get('reason')}: {waiting.get('message') or ''})".replace(
                ": )", ")"
            )
            return HostRun(node, error=why, hint=_IMAGE_HINT.format(image=image))
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "Unschedulable":
            why = f"probe pod cannot be scheduled: {cond.get('message') or 'Unschedulable'}"
            return HostRun(
                node,
                error=why,
                hint="the probe tolerates what the operator's pods tolerate: check the node's taints and resources",
            )
    if status.get("phase") in ("Failed", "Succeeded"):
        why = f"probe pod ended ({status.get('phase')}: {status.get('reason') or status.get('message') or 'no reason'})"
        return HostRun(node, error=why, hint="see kubectl describe pod")
    return None


def _pending_reason(pod: Mapping[str, Any] | None) -> str:
    if pod is None:
        return "no probe pod was created on the node (a taint the operator's tolerations do not cover, or the node is gone)"
    status = pod.get("status") or {}
    for cs in status.get("initContainerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f"the probe pod is still {waiting['reason']}"
    return f"the probe pod is still {status.get('phase') or 'Pending'}"


_ANSWERS = ('"terminated"', '"Unschedulable"', '"Failed"', '"Succeeded"', *(f'"{r}"' for r in sorted(_FAILED_WAITING)))
"""Strings one of which a pod's JSON contains once :func:`pod_outcome` can settle its node."""


def undecided(line: str) -> bool:
    """Whether a watch event's raw JSON shows a probe pod that cannot settle its node yet (created, scheduled,
    its probe still running): such events are not decoded. Cheap substring tests; a false "decided" only
    costs a decode."""
    return not any(answer in line for answer in _ANSWERS)


class _Follower:
    """Follows the run's pods (list, then watch; re-lists when the watch expires) and settles each node once."""

    def __init__(
        self,
        gateway: Gateway,
        namespace: str,
        run_id: str,
        nodes: Sequence[str],
        steps: Sequence[Step],
        image: str,
        created: str = "",
    ) -> None:
        self.pending = set(nodes)
        self.steps = steps
        self.image = image
        self.settled: set[str] = set()
        """Pods whose node is settled: their later events (the main container starting) are not decoded."""
        self.last: dict[str, Mapping[str, Any]] = {}
        """Node -> its pod as last seen (for the reason a node timed out)."""
        self.out: asyncio.Queue[HostRun] = asyncio.Queue()
        self.pods: WatchCache[dict[str, Any]] = WatchCache(
            gateway,
            "pods",
            namespace=namespace,
            label_selector=f"{RUN_LABEL}={run_id}",
            keep=False,
            skip=self.skip,
            since=created,
        )
        """The run's pods, kept nowhere. The first watch starts at the DaemonSet's creation (``created``): every pod
        of the run comes after it, so it needs no list of pods that, that early, cannot have answered."""

    @property
    def trouble(self) -> ClusterError | None:
        """The watch's last failure while no event has come since (said with the nodes still pending at the deadline)."""
        return self.pods.trouble

    def see(self, pod: Mapping[str, Any]) -> None:
        node = _pod_node(pod)
        if node not in self.pending or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        run = pod_outcome(pod, node, self.steps, self.image)
        if run is None:
            self.last[node] = pod
        else:  # a settled node's pod is not kept (5,000 decoded pods add up)
            self.settled.add(str(pod["metadata"].get("name") or ""))
            self.pending.discard(node)
            self.last.pop(node, None)
            self.out.put_nowait(run)

    def skip(self, line: str) -> bool:
        """Whether a watch event's raw line need not be decoded: its pod settled its node already, or cannot
        yet (:func:`undecided`). The pod's name is the first ``"name"`` key of the line (metadata's; were it
        another object's, the line would only be decoded). A line that is no event (no ``"object"`` key: the
        Status of a watch refused with 403, 429 or 500) is always decoded, so that the refusal is raised instead
        of passing for a watch that ended."""
        if '"object"' not in line:
            return False  # not an event: an error answer's Status, which the watch must raise
        at = line.find('"name":"')
        if at >= 0 and line[at + 8 : line.find('"', at + 8)] in self.settled:
            return True
        return undecided(line)

    async def follow(self) -> None:
        """Watch (after a list, unless the DaemonSet was just created) until every node is settled. Only events
        that can settle a node are decoded (:meth:`skip`), and the loop is handed back every few milliseconds
        while a burst is handled.

        A watch that ends (the server's timeout) or fails (an error answer, a dropped connection, the client's
        timeout, an end at once with nothing: :class:`~wizard.cluster.gateway.watches.EndedEmpty`) is opened
        again from the last resourceVersion seen by the watch cache, under :data:`~wizard.retry.RECONNECT`; a 410
        lists again, and the last failure is raised once the policy's attempts are used up. The run's deadline
        bounds it all."""
        if not self.pending:
            return
        async with contextlib.aclosing(self.pods.events()) as events:
            async for kind, pod in events:
                if kind in ("ADDED", "MODIFIED"):
                    self.see(pod)
                if not self.pending:
                    return

    async def refresh(self) -> None:
        """Read the unsettled nodes' pods again at the deadline: one that answered just now settles its node,
        the others give the reason a node has no result (the watch passed over their undecided states);
        the pods as last seen if the list fails."""
        with contextlib.suppress(ClusterError):
            async with contextlib.aclosing(self.pods.listing()) as listed:
                async for _, pod in listed:
                    self.see(pod)


async def follow_pods(
    gateway: Gateway,
    namespace: str,
    run_id: str,
    nodes: Sequence[str],
    steps: Sequence[Step],
    image: str,
    budget: float,
    created: str,
) -> AsyncGenerator[HostRun, None]:
    """Each node's :class:`HostRun` as its pod answers; the rest when ``budget`` seconds have passed."""
    follower = _Follower(gateway, namespace, run_id, nodes, steps, image, created)
    watcher = asyncio.create_task(follower.follow())
    deadline = time.monotonic() + budget
    try:
        left = len(nodes)
        while left:
            get = asyncio.ensure_future(follower.out.get())
            done, _ = await asyncio.wait(
                {get, watcher}, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED
            )
            if get in done:
                left -= 1
                yield get.result()
                continue
            get.cancel()
            failure = watcher.exception() if watcher.done() and not watcher.cancelled() else None
            if failure is None and follower.pending:  # the deadline, not the watch's end: look once more
                watcher.cancel()
                await follower.refresh()
            while not follower.out.empty():
                left -= 1
                yield follower.out.get_nowait()
            for node in sorted(follower.pending):
                if failure is not None:
                    why = (
                        failure.message
                        if isinstance(failure, ClusterError)
                        else f"{failure.__class__.__name__}: {failure}"
                    )
                    hint = (failure.hint if isinstance(failure, ClusterError) else "") or "run the check again"
                    yield HostRun(node, error=f"lost track of the probe pods: {why}", hint=hint)
                else:
                    why = _pending_reason(follower.last.get(node))
                    if follower.trouble is not None:  # the watch was failing when the time ran out: say so
                        why += f" (watching the probe pods failed: {follower.trouble.message})"
                    yield HostRun(
                        node,
                        error=f"no probe result within {budget:.0f}s: {why}",
                        hint="check that the node is Ready and can pull the probe image",
                    )
            return
    finally:
        watcher.cancel()
        with contextlib.suppress(BaseException):
            await watcher
