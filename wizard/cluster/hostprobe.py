"""Running the same check steps on the hosts of many nodes: the one entry point for host checks.

Callers (the path check, the pre-installed host check, the node doctor) hand over the nodes and the
:class:`~wizard.engine.nodescript.Step` list and get one :class:`HostRun` per node as each node
finishes, in completion order. How the steps reach the host is this module's business: today a
privileged probe pod per node (:class:`wizard.cluster.probe.ProbePod`), ``concurrency`` at once,
every pod of the run removed at the end, also on cancellation; a pod that could not be deleted is
yielded as a :class:`~wizard.cluster.probe.Leftover`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.probe import Leftover, ProbePod, sweep
from wizard.engine.nodescript import Step, StepResult


@dataclass(frozen=True)
class HostRun:
    """What the steps gave on one node's host, or why they could not run there."""

    node: str
    results: list[StepResult] = field(default_factory=list)
    """One per step, in the steps' order (empty when ``error`` is set)."""
    error: str = ""
    """Why the probe could not run on the node ("" when it ran)."""
    hint: str = ""

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
            results = await shell.run_steps(steps, lambda _stream, _line: None)
    except ClusterError as exc:
        hint = exc.hint or "check that the node is Ready and its kubelet reachable"
        return HostRun(node, error=exc.message, hint=hint), probe.leftover
    return HostRun(node, results=results), probe.leftover


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

    Closing the generator early (or cancelling its consumer) stops the remaining nodes and removes
    every probe pod of this run, including one whose create was interrupted.
    """
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
