"""The node doctor's cluster side: run the host checks of :mod:`wizard.engine.hostdoctor` on GPU nodes.

The steps go through the one host-check entry point, :func:`wizard.cluster.hostprobe.run_on_hosts`
(privileged, host root mounted, removed afterwards); each node's results become a
:class:`~wizard.engine.hostdoctor.HostState` as the node finishes. Judging the states against a plan
is the engine's (:func:`~wizard.engine.hostdoctor.host_findings`), so a front end can keep the states
and judge them again when the user changes the mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Sequence

from wizard.cluster.gateway import Gateway
from wizard.cluster.hostprobe import run_on_hosts
from wizard.cluster.pathcheck import HostPath, finding, steps_for
from wizard.cluster.probe import Leftover
from wizard.engine.facts import NodeFacts
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_steps, read_host
from wizard.engine.results import Check


async def host_states(
    gateway: Gateway,
    nodes: Sequence[NodeFacts],
    target: DoctorTarget,
    *,
    namespace: str,
    image: str,
    timeout: float = 60.0,
    concurrency: int = 16,
    paths: Sequence[HostPath] = (),
) -> AsyncGenerator[HostState | Check, None]:
    """Each node's :class:`HostState` as it finishes; a probe pod left behind comes as a failed Check.

    ``paths`` (the Paths step's folders) are checked by the same probe, one pod per node for both, and
    come back in each state's ``path_checks``.
    """
    by_name = {n.name: n for n in nodes}
    host = host_steps(target, {n.os_id for n in nodes})
    steps = [*host, *steps_for(paths)]
    runs = run_on_hosts(
        gateway, list(by_name), steps, namespace=namespace, image=image, timeout=timeout, concurrency=concurrency
    )
    async with contextlib.aclosing(runs):
        async for run in runs:
            if isinstance(run, Leftover):
                yield run.check()
                continue
            facts = by_name.get(run.node)
            os_id = facts.os_id if facts is not None else ""
            if not run.ran:
                why = f"{run.error} ({run.hint})" if run.hint else run.error
                yield HostState(run.node, os_id=os_id, error=why)
                continue
            state = read_host(run.node, os_id, host, run.results[: len(host)])
            if paths:
                results = run.by_check(steps)
                state = dataclasses.replace(state, path_checks=tuple(finding(p, results, run.node) for p in paths))
            yield state
