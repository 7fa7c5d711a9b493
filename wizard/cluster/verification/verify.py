"""Prove the driver works on every GPU node: streamed checks of each driver pod and host.

The stream yields :class:`~wizard.engine.results.Check` and :class:`~wizard.engine.results.LogLine` items as they
happen. Nodes are verified concurrently (an ``asyncio.Semaphore`` bounds how many at once), each
with its own timeouts, so a slow or failing node never holds up the others. Per GPU node:

* driver modes: the driver pod (``app.kubernetes.io/component=nvidia-driver``, containers by name),
  its ``nvidia-driver-ctr`` spec image against the rendered image for that node, the running
  ``imageID`` digest against the registry's digest of that tag (a tag re-pushed after the pull shows
  up here), and ``nvidia-smi`` run in the container, its output streamed and parsed;
* pre-installed mode: the ``nvidia.com/gpu.deploy.driver=pre-installed`` label and ``nvidia-smi`` on
  the host through the host probe;
* every mode: the toolkit binary's mount (``noexec`` flagged), ``/run/nvidia/driver`` for the
  containerized driver, and the containerd drop-in's ``BinaryName`` against the live installDir.

A node's commands run as scripts (:mod:`wizard.engine.nodescript`): ``nvidia-smi`` as an exec in the
driver container; the host checks (the same steps on every node) through ONE host probe run for
all the nodes (:func:`wizard.cluster.probes.hostprobe.run_on_hosts`: one DaemonSet), started with the
verification, each node's host results reported as soon as both they and the node's own checks are
in. The operator's ``nvidia-driver-ctr`` has no host root, so the host checks always take the probe
path, the same on the demo as on a real cluster. Cancelling the consumer cancels every node task
and the probe run, which removes what it created on the way out.

This module runs the nodes and streams their findings (:class:`Outbox`: in order, drained in slices
that hand the event loop back); one node's checks are :class:`~wizard.cluster.verification.verify_node.NodeRun`,
what they share is :class:`~wizard.cluster.verification.verify_context.VerifyContext`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence

from wizard import collector
from wizard.cluster.core.operator_status import DEFAULT_DROP_IN, live_paths, plan_held, policy_checks
from wizard.cluster.core.slices import Slices
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.probes.hostprobe import HostRun, run_on_hosts
from wizard.cluster.probes.probe import Leftover
from wizard.cluster.verification.verify_context import DriverPod, VerifyContext
from wizard.cluster.verification.verify_node import Emit, Item, NodeRun
from wizard.engine.facts import NodeFacts
from wizard.engine.operator_names import DRIVER_SELECTOR
from wizard.engine.results import Check, Status

__all__ = [
    "DEFAULT_DROP_IN",
    "DriverPod",
    "Outbox",
    "VerifyContext",
    "driver_pod_pages",
    "live_paths",
    "plan_held",
    "policy_checks",
    "summary",
    "verify_nodes",
]

log = logging.getLogger(__name__)
KEEP_EVERY = 200
"""Nodes finished between two freezes of what the run built (:func:`wizard.collector.keep`): without them the
survivors of thousands of nodes were walked by every full collection, each a stall of the loop."""
POD_PAGE = 100
"""Driver pods per list page: each page is decoded on the event loop in one go (a stall that grows with the page)."""


def summary(ctx: VerifyContext, total: int) -> Check:
    """The last line: failed nodes, else the passed checks and the SKIPPED ones with their reasons."""
    counts = {"passed": ctx.passed, "skipped": len(ctx.skipped), "nodes": total}
    if ctx.failed:
        shown = ", ".join(sorted(ctx.failed)[:10]) + ("…" if len(ctx.failed) > 10 else "")
        skipped = f" ({len(ctx.skipped)} checks SKIPPED)" if ctx.skipped else ""
        return Check(
            "summary", Status.FAIL, f"{len(ctx.failed)} of {total} GPU nodes failed: {shown}{skipped}", data=counts
        )
    if ctx.skipped:
        reasons = list(dict.fromkeys(f"{c.check}: {c.data.get('reason') or c.message}" for c in ctx.skipped))
        why = reasons[0] + (f"; and {len(reasons) - 1} other reasons" if len(reasons) > 1 else "")
        return Check(
            "summary",
            Status.SKIP,
            f"{total} GPU nodes: {ctx.passed} checks passed, {len(ctx.skipped)} SKIPPED ({why})",
            hint="a check that could not run is not a pass: fix its cause and verify again",
            data=counts,
        )
    said = "the GPU node verified" if total == 1 else f"all {total} GPU nodes verified"  # not "all 1 GPU nodes"
    return Check("summary", Status.PASS, said, data=counts)


async def _probe_hosts(ctx: VerifyContext, nodes: Sequence[str], concurrency: int, emit: Emit) -> None:
    """One host probe run for every node; each result goes to the node's future as it arrives."""
    runs = run_on_hosts(
        ctx.gateway,
        nodes,
        ctx.host_steps(),
        namespace=ctx.namespace,
        image=ctx.probe_image,
        timeout=ctx.timeout,
        concurrency=concurrency,
        node_labels=ctx.node_labels,
        policy=ctx.policy,
        policy_known=True,
    )
    try:
        async with contextlib.aclosing(runs):
            async for item in runs:
                if isinstance(item, Leftover):
                    ctx.leftovers[item.name] = item
                    emit(item.check())
                elif not ctx.host_result(item.node).done():
                    ctx.host_result(item.node).set_result(item)
    except ClusterError as exc:
        for node in nodes:
            if not ctx.host_result(node).done():
                ctx.host_result(node).set_result(HostRun(node, error=exc.message, hint=exc.hint))
    for node in nodes:
        if not ctx.host_result(node).done():
            ctx.host_result(node).set_result(HostRun(node, error="the host probe gave no result for this node"))


class Outbox:
    """Findings and log lines of every node task, in the order they were made, to the one consumer.

    A node's ``nvidia-smi`` output alone is ~50 log lines: items are appended to a deque (a frame's
    lines at once) and the consumer wakes once per batch (an ``asyncio.Queue`` costs a put, a get and a
    wake-up check per item). The consumer hands the loop back every few milliseconds while it drains a
    long batch: its :class:`~wizard.cluster.core.slices.Slices` looks at the clock after every item, so one
    costly item (a consumer's redraw) cannot carry the slice past its budget by a count of items.
    """

    def __init__(self) -> None:
        self.items: collections.deque[Item] = collections.deque()
        self.ready = asyncio.Event()
        self.closed = False
        self.slices = Slices()

    def put(self, item: Item) -> None:
        self.items.append(item)
        self.ready.set()

    def put_many(self, items: list[Item]) -> None:
        self.items.extend(items)
        self.ready.set()

    def close(self) -> None:
        """No more items: the consumer ends once it has taken those already in."""
        self.closed = True
        self.ready.set()

    async def drain(self) -> AsyncGenerator[Item, None]:
        """Every item, as it comes, until :meth:`close`."""
        items, slices = self.items, self.slices
        while True:
            await self.ready.wait()
            self.ready.clear()
            while items:
                yield items.popleft()
                await slices.pause()
            if self.closed:
                return


async def verify_nodes(
    ctx: VerifyContext,
    nodes: list[NodeFacts],
    concurrency: int,
    pod_pages: AsyncGenerator[list[DriverPod], None] | None = None,
) -> AsyncGenerator[Item, None]:
    """Verify ``nodes`` concurrently, yielding findings as they arrive; cleans up on cancellation.

    With ``pod_pages`` the driver pods are read while the first nodes are already being checked: a
    node starts as soon as its pod is known, the nodes without one once every page is read. The
    host probe runs for every node from the start; a node's host checks are reported once its own
    checks are done (outside the concurrency bound: they only wait).
    """
    outbox = Outbox()
    semaphore = asyncio.Semaphore(max(1, concurrency))
    pending = {node.name: node for node in nodes}
    tasks: list[asyncio.Task[None]] = []

    finished = 0

    async def one(node: NodeFacts) -> None:
        nonlocal finished
        run = NodeRun(ctx, node, outbox.put, outbox.put_many)
        try:
            async with semaphore:
                await run.run()
            if run.wants_host:
                await run.host_checks()
        except ClusterError as exc:
            run.emit("node", Status.FAIL, exc.message, hint=exc.hint)
        except Exception as exc:  # a bug in one node's checks must not end the others
            run.emit("node", Status.FAIL, f"unexpected error: {exc.__class__.__name__}: {exc}")
        finished += 1
        if finished % KEEP_EVERY == 0:
            collector.keep()  # what the run keeps (results, the consumer's checks) is not rescanned by full collections

    def start(name: str) -> None:
        node = pending.pop(name, None)
        if node is not None:
            tasks.append(asyncio.create_task(one(node)))

    async def feed() -> None:
        try:
            if pod_pages is not None:
                async with contextlib.aclosing(pod_pages):
                    async for page in pod_pages:
                        for pod in page:
                            if pod.node in pending:
                                ctx.pods[pod.node] = pod
                                start(pod.node)
            for name in list(pending):
                start(name)
        except ClusterError as exc:
            outbox.put(Check("driver-pod", Status.FAIL, f"cannot list the driver pods: {exc.message}", hint=exc.hint))
            for name in list(pending):
                ctx.failed.add(name)
                pending.pop(name)
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(prober, return_exceptions=True)
        outbox.close()

    with collector.frozen():  # the heap as it is (nodes' facts, a front end's state) is not rescanned meanwhile
        prober = asyncio.create_task(_probe_hosts(ctx, [n.name for n in nodes], concurrency, outbox.put))
        feeder = asyncio.create_task(feed())
        try:
            async with contextlib.aclosing(outbox.drain()) as items:
                async for item in items:
                    yield item
        finally:
            for task in (feeder, *tasks):
                task.cancel()
            prober.cancel()  # closes the probe run: it removes its DaemonSet (shielded), logs what it could not
            if tasks:
                await asyncio.wait(tasks, timeout=ctx.timeout)
            await asyncio.wait([prober], timeout=ctx.timeout)


async def driver_pod_pages(gateway: Gateway, namespace: str) -> AsyncGenerator[list[DriverPod], None]:
    """The driver pods, summarised, one API page at a time (terminating pods left out).

    The pages are read with the garbage collector paused (:func:`~wizard.collector.paused`): only the
    summaries outlive them."""
    with collector.paused():
        pages = gateway.pod_pages(namespace, label_selector=DRIVER_SELECTOR, limit=POD_PAGE)
        async with contextlib.aclosing(pages):
            async for page, _ in pages:
                yield [DriverPod.of(pod) for pod in page if not pod["metadata"].get("deletionTimestamp")]
