"""Running the same check steps on the hosts of many nodes: the one entry point for host checks.

Callers (the path check, verification's host checks, the pre-installed host check, the node doctor)
hand over the nodes and the :class:`~wizard.engine.nodescript.Step` list and get one
:class:`HostRun` per node as each node finishes, in completion order.

How the steps reach the hosts: for several nodes, ONE short-lived DaemonSet
(:mod:`wizard.cluster.probes.probeset`), node-selected by name to exactly those nodes, with the
operator's tolerations; its pods leave their results in their termination messages and
gpu-wizard follows them with one watch, so the API server sees a constant number of writes
(create and delete of the DaemonSet and of its deadline Job, :func:`~wizard.cluster.probes.probeset.anchor_job`)
whatever the node count. A pod that cannot start
(ImagePullBackOff, unschedulable…) gives its node a :class:`HostRun` with the error and a hint; a
node that has no result when the run's deadline passes gets one too (the follower:
:mod:`wizard.cluster.probes.probefollow`). For a single node, one probe
pod and an exec (:class:`wizard.cluster.probes.probe.ProbePod`) answer sooner. Whatever was created is
deleted at the end, on success, failure or cancellation (shielded); what could not be deleted is
yielded as a :class:`~wizard.cluster.probes.probe.Leftover` naming the ``kubectl delete`` to run, and
``gpu-wizard cleanup`` finds anything a killed run left by its owner label.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

from wizard import collector
from wizard.cluster.core.preflight import active_policy
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.probes.probe import Leftover, ProbePod, sweep
from wizard.cluster.probes.probefollow import HostRun, follow_pods
from wizard.cluster.probes.probeset import anchor_job, daemonset, policy_tolerations
from wizard.engine.nodescript import Step
from wizard.engine.results import Check, Status

__all__ = ["HostRun", "host_findmnt", "run_on_hosts", "truncation_check"]

log = logging.getLogger(__name__)
POLICY = ("nvidia.com", "v1", "clusterpolicies")
CONCURRENCY = 16
"""The one default of how many nodes are worked on at once where a run goes node by node (probe pods, execs):
the facade's host checks and verification take it from here."""
PODS_PER_SECOND = 20.0
"""How fast a DaemonSet controller is assumed to create pods: the run's deadline grows with the node count.
kube-controller-manager's client is held to ``--kube-api-qps`` 20 by default, one pod create a request: at 50 a
second, verification of the 5,000-node ``large`` scenario said "no probe pod was created on the node" for the
last 1,500 nodes of a healthy cluster (130 s for 5,000 pods)."""


def probe_budget(timeout: float, nodes: int) -> float:
    """Seconds a probe run waits for its nodes' results: each node's own timeout, plus the DaemonSet controller's
    time to create a pod on every node."""
    return timeout + nodes / PODS_PER_SECOND


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


async def _daemonset_run(
    gateway: Gateway,
    nodes: Sequence[str],
    steps: Sequence[Step],
    *,
    namespace: str,
    image: str,
    timeout: float,
    node_labels: Mapping[str, Mapping[str, str]] | None,
    policy: Mapping[str, Any] | None,
    policy_known: bool,
) -> AsyncGenerator[HostRun | Leftover, None]:
    run_id = uuid.uuid4().hex[:12]
    name = f"gpu-wizard-probe-{run_id}"
    budget = probe_budget(timeout, len(nodes))
    if not policy_known:
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
        node_labels=node_labels,
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
        follow = follow_pods(gateway, namespace, run_id, nodes, steps, image, budget, version)
        async with contextlib.aclosing(follow) as runs:
            async for run in runs:
                yield run
    finally:
        # Shielded: a Ctrl-C must still remove the privileged DaemonSet (its pods go with it) and its Job.
        leftovers = await asyncio.shield(_delete(gateway, namespace, name))
    for leftover in leftovers:  # closed early or cancelled: they were logged (the CLI prints them on stderr)
        yield leftover


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
    concurrency: int = CONCURRENCY,
    node_labels: Mapping[str, Mapping[str, str]] | None = None,
    policy: Mapping[str, Any] | None = None,
    policy_known: bool = False,
) -> AsyncGenerator[HostRun | Leftover, None]:
    """Run ``steps`` on each node's host; yield each node's :class:`HostRun` as it finishes.

    Several nodes: one DaemonSet for them all (``concurrency`` does not apply: every kubelet runs its
    own pod; ``timeout`` plus one second per 50 nodes for the pods to be created is the run's
    deadline). ``node_labels`` (every node's labels, by name, from discovery) lets the DaemonSet select
    thousands of nodes by one GPU label instead of naming each (:mod:`wizard.cluster.probes.probenodes`).
    One node: a probe pod and one exec. Closing the generator early (or cancelling its consumer) stops
    the run and removes what it created. ``policy_known``: ``policy`` is the active ClusterPolicy as the caller's
    session knows it (its tolerations go on the DaemonSet), so it is not listed again.
    """
    if len(nodes) <= 1:
        runs: AsyncGenerator[HostRun | Leftover, None] = _per_node_pods(
            gateway, nodes, steps, namespace=namespace, image=image, timeout=timeout, concurrency=concurrency
        )
    else:
        runs = _daemonset_run(
            gateway,
            nodes,
            steps,
            namespace=namespace,
            image=image,
            timeout=timeout,
            node_labels=node_labels,
            policy=policy,
            policy_known=policy_known,
        )
    with collector.frozen():  # thousands of results must not make the collector rescan the whole heap
        async with contextlib.aclosing(runs):
            async for item in runs:
                yield item
