"""The node doctor's cluster side: run the host checks of :mod:`wizard.engine.hostdoctor` on GPU nodes.

``Cluster.host_states`` and ``Cluster.host_doctor`` (:mod:`wizard.cluster.facade`) call here directly. The
steps go through the one host-check entry point, :func:`wizard.cluster.probes.hostprobe.run_on_hosts`
(privileged, host root mounted, removed afterwards); each node's results become a
:class:`~wizard.engine.hostdoctor.HostState` as the node finishes. Judging the states against a plan
is the engine's (:func:`~wizard.engine.hostdoctor.host_findings`), so a front end can keep the states
and judge them again when the user changes the mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING

from wizard.cluster.errors import ClusterError
from wizard.cluster.hostchecks import pathcheck
from wizard.cluster.probes.hostprobe import run_on_hosts
from wizard.cluster.probes.probe import Leftover, manager_image, probe_registry
from wizard.engine.hostdoctor import DoctorTarget, HostState, host_findings, host_steps, read_host
from wizard.engine.hostfolders import HostPath
from wizard.engine.plan import Plan
from wizard.engine.results import Check
from wizard.engine.textsafe import printable

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session


async def host_states(
    session: Session,
    doctor: DoctorTarget,
    nodes: list[str] | None,
    *,
    paths_of: Plan | None,
    folders: Sequence[HostPath] = (),
    concurrency: int,
    timeout: float,
) -> AsyncGenerator[HostState | Check, None]:
    """Each GPU node's :class:`HostState` as it finishes (see ``Cluster.host_states``); a probe pod left behind
    comes as a failed Check, and a node whose host nvidia-smi passed is remembered.

    ``paths_of`` (the Paths step's plan): its folders are checked by the same probe, one pod per node for both,
    and come back in each state's ``path_checks``; ``folders`` names them instead (the TUI's Nodes step: the
    folders of the wizard's default answers, before the answers make a plan).
    """
    facts = await session.discover()
    gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
    if nodes:
        known = {n.name for n in gpu}
        missing = [name for name in nodes if name not in known]
        if missing:
            raise ClusterError(
                f"no GPU node named {printable(missing[0])!r} in the cluster",
                "gpu-wizard discover lists the GPU nodes",
            )
        gpu = [n for n in gpu if n.name in set(nodes)]
    if not gpu:
        return
    preflight = await session.known_preflight()
    namespace = preflight.operator_namespace or doctor.namespace
    policy = await session.policy()
    registry = probe_registry("", preflight.operator_image, doctor.bundle)
    image = session.probe_image or manager_image(policy, doctor.bundle, registry)
    paths = pathcheck.prepare(paths_of, facts, toolkit_install_dir=None, nodes=None)[1] if paths_of else list(folders)
    by_name = {n.name: n for n in gpu}
    host = host_steps(doctor, {n.os_id for n in gpu})
    steps = [*host, *pathcheck.steps_for(paths)]
    runs = run_on_hosts(
        session.gateway,
        list(by_name),
        steps,
        namespace=namespace,
        image=image,
        timeout=timeout,
        concurrency=concurrency,
        node_labels=facts.labels_by_node(),
        policy=policy,
        policy_known=True,
    )
    async with contextlib.aclosing(runs):
        async for run in runs:
            if isinstance(run, Leftover):
                yield run.check()
                continue
            os_id = by_name[run.node].os_id if run.node in by_name else ""
            if not run.ran:
                why = f"{run.error} ({run.hint})" if run.hint else run.error
                yield HostState(run.node, os_id=os_id, error=why)
                continue
            state = read_host(run.node, os_id, host, run.results[: len(host)], run.cut())
            if paths:
                results = run.by_check(steps)
                checks = tuple(pathcheck.finding(p, results, run.node) for p in paths)
                state = dataclasses.replace(state, path_checks=checks)
            if state.host_driver and not state.error:
                session.proved_hosts([state.node])  # the host's own nvidia-smi passed: pre-installed apply may go
            yield state


async def host_doctor(
    session: Session, doctor: DoctorTarget, nodes: list[str] | None, *, concurrency: int, timeout: float
) -> AsyncGenerator[Check, None]:
    """The host findings for ``doctor`` on each GPU node, as each node finishes (see ``Cluster.host_doctor``)."""
    states = host_states(session, doctor, nodes, paths_of=None, concurrency=concurrency, timeout=timeout)
    async with contextlib.aclosing(states):
        async for state in states:
            if isinstance(state, Check):
                yield state
            else:
                for check in host_findings(doctor, state):
                    yield check
