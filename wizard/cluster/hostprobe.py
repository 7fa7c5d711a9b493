"""Running the same check steps on the hosts of many nodes: the one entry point for host checks.

Callers (the path check, verification's host checks, the pre-installed host check, the node doctor)
hand over the nodes and the :class:`~wizard.engine.nodescript.Step` list and get one
:class:`HostRun` per node as each node finishes, in completion order.

How the steps reach the hosts: for several nodes, ONE short-lived DaemonSet
(:mod:`wizard.cluster.probeset`), node-selected by name to exactly those nodes, with the
operator's tolerations; its pods leave their results in their termination messages and
gpu-wizard follows them with one watch, so the API server sees a constant number of writes
(create and delete of the DaemonSet and of its deadline Job, :func:`~wizard.cluster.probeset.anchor_job`)
whatever the node count. A pod that cannot start
(ImagePullBackOff, unschedulable…) gives its node a :class:`HostRun` with the error and a hint; a
node that has no result when the run's deadline passes gets one too. For a single node, one probe
pod and an exec (:class:`wizard.cluster.probe.ProbePod`) answer sooner. Whatever was created is
deleted at the end, on success, failure or cancellation (shielded); what could not be deleted is
yielded as a :class:`~wizard.cluster.probe.Leftover` naming the ``kubectl delete`` to run, and
``gpu-wizard cleanup`` finds anything a killed run left by its owner label.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard import collector
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.cluster.preflight import active_policy
from wizard.cluster.probe import _FAILED_WAITING, Leftover, ProbePod, sweep
from wizard.cluster.probeset import (
    PROBE_CONTAINER,
    RUN_LABEL,
    anchor_job,
    daemonset,
    policy_tolerations,
    read_message,
)
from wizard.cluster.slices import Slices
from wizard.engine.nodescript import Step, StepResult
from wizard.engine.results import Check, Status

log = logging.getLogger(__name__)
POLICY = ("nvidia.com", "v1", "clusterpolicies")
PODS_PER_SECOND = 50.0
"""How fast a DaemonSet controller is assumed to create pods: the run's deadline grows with the node count."""
LIST_PAGE = 100
"""Pods per list page: a page is decoded on the event loop in one go (500 probe pods took ~100 ms)."""
_IMAGE_HINT = "the probe image {image} must be pullable on the node; pass --probe-image with a mirrored copy"


def host_findmnt(path: str) -> tuple[str, ...]:
    """``findmnt`` of ``path`` in the host init's mount table (``--task 1``): the host's own ``rw``/``ro``,
    not the flags of the probe's read-only bind of ``/``."""
    return ("findmnt", "--task", "1", "-n", "-o", "TARGET,OPTIONS", "-T", path)


def truncation_check(node: str, truncated: Sequence[str]) -> Check:
    """The warning that a step's output was cut to fit the probe's result (never silent)."""
    return Check(
        "probe-output",
        Status.WARN,
        f"output cut to fit the probe's 4096-byte result: {'; '.join(truncated)}",
        node=node,
        hint="the checks read what was kept; run the command on the node to see all of it",
        data={"truncated": list(truncated)},
    )


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

    def by_check(self, steps: Sequence[Step]) -> dict[str, StepResult]:
        """The results keyed by each step's check name."""
        return {step.check: result for step, result in zip(steps, self.results, strict=True)}


async def _one_node(
    gateway: Gateway, node: str, steps: Sequence[Step], *, namespace: str, image: str, timeout: float, run_id: str
) -> tuple[HostRun, Leftover | None]:
    probe = ProbePod(gateway, node, namespace, image, timeout=timeout, run_id=run_id)
    try:
        async with probe as shell:
            results = await shell.run_steps(steps, lambda _stream, _lines: None)
    except ClusterError as exc:
        hint = exc.hint or "check that the node is Ready and its kubelet reachable"
        return HostRun(node, error=exc.message, hint=hint), probe.leftover
    return HostRun(node, results=results), probe.leftover


async def _per_node_pods(
    gateway: Gateway,
    nodes: Sequence[str],
    steps: Sequence[Step],
    *,
    namespace: str,
    image: str,
    timeout: float,
    concurrency: int,
) -> AsyncGenerator[HostRun | Leftover, None]:
    """One probe pod per node, ``concurrency`` at once (the single-node path; kept for the benchmark's comparison)."""
    run_id = uuid.uuid4().hex[:12]
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(node: str) -> tuple[HostRun, Leftover | None]:
        async with semaphore:
            return await _one_node(
                gateway, node, steps, namespace=namespace, image=image, timeout=timeout, run_id=run_id
            )

    tasks = [asyncio.create_task(one(node)) for node in nodes]
    try:
        for done in asyncio.as_completed(tasks):
            run, leftover = await done
            yield run
            if leftover is not None:
                yield leftover
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        with contextlib.suppress(Exception):
            await asyncio.shield(sweep(gateway, namespace, run_id))


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
        self.gateway = gateway
        self.created = created
        """The resourceVersion of the DaemonSet's creation: every pod of the run comes after it, so the first
        watch starts there instead of after a list (of pods that, that early, cannot have answered)."""
        self.namespace = namespace
        self.selector = f"{RUN_LABEL}={run_id}"
        self.pending = set(nodes)
        self.steps = steps
        self.image = image
        self.last: dict[str, Mapping[str, Any]] = {}
        """Node -> its pod as last seen (for the reason a node timed out)."""
        self.out: asyncio.Queue[HostRun] = asyncio.Queue()

    def see(self, pod: Mapping[str, Any]) -> None:
        node = _pod_node(pod)
        if node not in self.pending or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        run = pod_outcome(pod, node, self.steps, self.image)
        if run is None:
            self.last[node] = pod
        else:  # a settled node's pod is not kept (5,000 decoded pods add up)
            self.pending.discard(node)
            self.last.pop(node, None)
            self.out.put_nowait(run)

    async def follow(self) -> None:
        """Watch (after a list, unless the DaemonSet was just created) until every node is settled. Only events that can settle a node are decoded
        (:func:`undecided`), and the loop is handed back every few milliseconds while a burst is handled."""
        slices = Slices()
        version, self.created = self.created, ""
        while self.pending:
            if not version:  # first, without a creation to start from, or after the watch expired: list
                pages = self.gateway.pod_pages(self.namespace, label_selector=self.selector, limit=LIST_PAGE)
                async with contextlib.aclosing(pages):
                    async for pods, listed in pages:
                        version = version or listed  # the list's snapshot: the watch goes on from the first page's
                        for pod in pods:
                            self.see(pod)
                            await slices.pause()
            try:
                events = self.gateway.watch_resource(
                    "pods", version, namespace=self.namespace, label_selector=self.selector, skip=undecided
                )
                async with contextlib.aclosing(events):
                    async for kind, pod in events:
                        if kind in ("ADDED", "MODIFIED"):
                            self.see(pod)
                        if not self.pending:
                            return
                        await slices.pause()
            except Gone:
                pass
            version = ""  # the watch ended (expired, or the server's timeout): list again

    async def refresh(self) -> None:
        """Read the unsettled nodes' pods again at the deadline: one that answered just now settles its node,
        the others give the reason a node has no result (the watch passed over their undecided states);
        the pods as last seen if the list fails."""
        with contextlib.suppress(ClusterError):
            pages = self.gateway.pod_pages(self.namespace, label_selector=self.selector, limit=LIST_PAGE)
            async with contextlib.aclosing(pages):
                async for pods, _ in pages:
                    for pod in pods:
                        self.see(pod)


async def _daemonset_run(
    gateway: Gateway,
    nodes: Sequence[str],
    steps: Sequence[Step],
    *,
    namespace: str,
    image: str,
    timeout: float,
) -> AsyncGenerator[HostRun | Leftover, None]:
    run_id = uuid.uuid4().hex[:12]
    name = f"gpu-wizard-probe-{run_id}"
    budget = timeout + len(nodes) / PODS_PER_SECOND
    try:
        policy = active_policy(await gateway.list_custom(*POLICY))
    except ClusterError:
        policy = None  # no permission to read it: the chart's default tolerations
    deadline_s = int(budget) + 300
    try:
        job = await gateway.create_job(
            namespace, anchor_job(name, namespace, image=image, run_id=run_id, deadline_s=deadline_s)
        )
    except ClusterError as exc:
        for node in nodes:
            yield HostRun(node, error=f"cannot create the probe's deadline Job: {exc.message}", hint=exc.hint)
        return
    body = daemonset(
        name,
        namespace,
        nodes,
        steps,
        image=image,
        run_id=run_id,
        tolerations=policy_tolerations(policy),
        sleep_s=deadline_s,
        owner=job,
    )
    leftovers: list[Leftover] = []
    try:
        try:
            created = await gateway.create_daemonset(namespace, body)
        except ClusterError as exc:
            for node in nodes:
                yield HostRun(node, error=f"cannot create the probe DaemonSet: {exc.message}", hint=exc.hint)
            return
        version = str((created.get("metadata") or {}).get("resourceVersion") or "")
        follow = _follow(gateway, namespace, run_id, nodes, steps, image, budget, version)
        async with contextlib.aclosing(follow) as runs:
            async for run in runs:
                yield run
    finally:
        # Shielded: a Ctrl-C must still remove the privileged DaemonSet (its pods go with it) and its Job.
        leftovers = await asyncio.shield(_delete(gateway, namespace, name))
    for leftover in leftovers:  # closed early or cancelled: they were logged (the CLI prints them on stderr)
        yield leftover


async def _follow(
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
                    yield HostRun(node, error=f"lost track of the probe pods: {why}", hint="run the check again")
                else:
                    why = _pending_reason(follower.last.get(node))
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


async def _delete(gateway: Gateway, namespace: str, name: str) -> list[Leftover]:
    """Delete the run's DaemonSet, then its deadline Job (both named ``name``); what failed, as leftovers."""
    leftovers = []
    for kind, delete in (("daemonset", gateway.delete_daemonset), ("job", gateway.delete_job)):
        try:
            await delete(namespace, name)
        except ClusterError as exc:
            leftover = Leftover(namespace, name, "", exc.message, kind=kind)
            log.warning(leftover.message)
            leftovers.append(leftover)
    return leftovers


async def run_on_hosts(
    gateway: Gateway,
    nodes: Sequence[str],
    steps: Sequence[Step],
    *,
    namespace: str,
    image: str,
    timeout: float = 30.0,
    concurrency: int = 16,
) -> AsyncGenerator[HostRun | Leftover, None]:
    """Run ``steps`` on each node's host; yield each node's :class:`HostRun` as it finishes.

    Several nodes: one DaemonSet for them all (``concurrency`` does not apply: every kubelet runs its
    own pod; ``timeout`` plus one second per 50 nodes for the pods to be created is the run's
    deadline). One node: a probe pod and one exec. Closing the generator early (or cancelling its
    consumer) stops the run and removes what it created.
    """
    if len(nodes) <= 1:
        runs: AsyncGenerator[HostRun | Leftover, None] = _per_node_pods(
            gateway, nodes, steps, namespace=namespace, image=image, timeout=timeout, concurrency=concurrency
        )
    else:
        runs = _daemonset_run(gateway, nodes, steps, namespace=namespace, image=image, timeout=timeout)
    with collector.frozen():  # thousands of results must not make the collector rescan the whole heap
        async with contextlib.aclosing(runs):
            async for item in runs:
                yield item
