"""What the facade runs on the GPU nodes themselves: the pre-installed driver gate and the verification
after apply.

:class:`wizard.cluster.facade.Cluster` keeps the front ends' methods (and their documentation) and
calls here with its :class:`~wizard.cluster.core.session.Session` (as it calls the host checks before apply:
:mod:`wizard.cluster.hostchecks.pathcheck`, :mod:`wizard.cluster.hostchecks.hostcheck`); what a check proves (a host's own
nvidia-smi passed) is remembered in the session, never in the facade. Every check on a node's host goes through
:func:`wizard.cluster.probes.hostprobe.run_on_hosts`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wizard.cluster.core.caches import FeedView
from wizard.cluster.core.liveplan import known_release
from wizard.cluster.core.operator_status import SETTLE_S, turned_not_ready
from wizard.cluster.core.preflight import DRIVERS, POLICY, active_policy
from wizard.cluster.core.rollout_cache import PodStatus, slim_pod, waiting_entries
from wizard.cluster.core.watchcache import WatchCache, stop_followers
from wizard.cluster.errors import ClusterError
from wizard.cluster.probes.hostprobe import CONCURRENCY
from wizard.cluster.probes.probe import manager_image, probe_registry
from wizard.cluster.rollouts.rollout_verdict import FATAL_WAITING
from wizard.cluster.verification import verify as verifying
from wizard.engine.mirror import operator_choices
from wizard.engine.plan import Plan
from wizard.engine.render import Rendered, render
from wizard.engine.results import Check, LogLine, Status

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session
    from wizard.cluster.gateway import Gateway
    from wizard.engine.facts import ClusterFacts, NodeFacts
    from wizard.registry.client import RegistryClient


async def require_host_drivers(session: Session, plan: Plan | None) -> None:
    """Pre-installed mode: probe the GPU hosts not yet verified; ClusterError naming those whose nvidia-smi failed."""
    facts = await session.discover()
    gpu = [n for n in facts.gpu_nodes if n.name not in session.host_verified]
    if gpu:
        if plan is None:
            raise ClusterError(
                "pre-installed mode: cannot tell which release to probe with",
                "pass --allow-unverified-preinstalled",
            )
        await probe_hosts(session, plan, gpu, facts)
    missing = sorted(n.name for n in facts.gpu_nodes if n.name not in session.host_verified)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ClusterError(
            f"nothing applied: pre-installed mode needs a working host driver, but nvidia-smi did not pass on {shown}",
            "fix the host driver (gpu-wizard verify shows the output), or pass --allow-unverified-preinstalled",
        )


async def host_drivers(session: Session) -> dict[str, str]:
    """GPU node -> the driver version its host's own ``nvidia-smi`` reports ("" where none answers)."""
    facts = await session.discover()
    gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
    if not gpu:
        return {}
    preflight = await session.known_preflight()
    plan = Plan.model_validate(
        {
            "mode": "preinstalled",
            "operator": {
                "version": known_release(preflight.operator_release),
                "namespace": preflight.operator_namespace,
            },
        }
    )
    return await probe_hosts(session, plan, gpu, facts)


async def probe_hosts(session: Session, plan: Plan, nodes: list[NodeFacts], facts: ClusterFacts) -> dict[str, str]:
    """Run the pre-installed host checks on ``nodes`` (one host probe run): node -> host driver version ("" none)."""
    found = {n.name: "" for n in nodes}
    ctx = await verify_context(session, plan, None, registry=None, timeout=30.0)
    ctx.node_labels = facts.labels_by_node()
    try:
        pages = verifying.driver_pod_pages(session.gateway, ctx.namespace)
        async with contextlib.aclosing(verifying.verify_nodes(ctx, nodes, CONCURRENCY, pages)) as probes:
            async for item in probes:
                if isinstance(item, Check) and item.check == "host-nvidia-smi" and item.ok and item.node:
                    found[item.node] = str((item.data or {}).get("driver_version") or "")
    finally:
        session.proved_hosts(ctx.host_ok)
    return found


async def operator_objects(gateway: Gateway, plan: Plan) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The active ClusterPolicy and, when the plan uses them, the NVIDIADrivers, as the server holds them now."""
    policy = active_policy(await gateway.list_custom(*POLICY))
    drivers = await gateway.list_custom(*DRIVERS) if plan.driver.useNvidiaDriverCRD else []
    return policy, drivers


async def settled(
    session: Session, plan: Plan, namespace: str, window: float
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """Follow the operator's objects until they are ready, a pod's image pull failed (no later pass turns that
    ready), or ``window`` seconds passed; the last read.

    Woken by watches, not by a timer: the session's ClusterPolicy watch (its one list and watch) and, for the
    window, a watch cache of the namespace's pods that indexes the waiting ones; the NVIDIADrivers (when the plan
    uses them) are read again on each change."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + window
    changed = asyncio.Event()
    policies: FeedView[dict[str, Any]] = FeedView(session.policy_feed(), changed)
    pods: WatchCache[Any] = WatchCache(
        session.gateway, "pods", changed, namespace=namespace, slim=slim_pod, index=waiting_entries
    )
    tasks = [asyncio.create_task(policies.run()), asyncio.create_task(pods.run())]
    try:
        while True:
            remaining = deadline - loop.time()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), max(0.0, remaining))
            changed.clear()
            for task in tasks:
                if task.done():
                    task.result()  # a watch gave up: its error
            policy = active_policy(policies.items())
            drivers = await session.gateway.list_custom(*DRIVERS) if plan.driver.useNvidiaDriverCRD else []
            if all(c.ok for c in verifying.policy_checks(plan, policy, drivers)) or loop.time() >= deadline:
                return policy, drivers
            waiting: list[PodStatus] = pods.indexed_items()
            if any(w.phase == "Pending" and w.reason in FATAL_WAITING for w in waiting):
                return policy, drivers
    finally:
        await stop_followers(tasks)


async def verify(
    session: Session,
    plan: Plan,
    rendered: Rendered | None,
    *,
    registry: RegistryClient | None,
    no_registry: str,
    concurrency: int,
    timeout: float,
) -> AsyncGenerator[Check | LogLine, None]:
    """The whole verification (see ``Cluster.verify``).

    A policy that turned notReady moments ago is re-read while the nodes are checked, and judged just
    before the summary: a newcomer who presses Next the moment the rollout said ready must not get the
    operator's one-pass flap as a failure.
    """
    gateway = session.gateway
    policy, drivers = await operator_objects(gateway, plan)
    young = turned_not_ready(policy, drivers, datetime.now(UTC), SETTLE_S)
    settling: asyncio.Task[tuple[dict[str, Any] | None, list[dict[str, Any]]]] | None = None
    if young:
        namespace = await session.namespace(plan)
        settling = asyncio.create_task(settled(session, plan, namespace, SETTLE_S))
    try:
        if young:
            yield LogLine(f"{young}: read again for up to {SETTLE_S:.0f} s (the operator re-checks every 5 s)")
        else:
            for check in verifying.policy_checks(plan, policy, drivers):
                yield check
        items = _verify_nodes(session, plan, rendered, policy, drivers, registry, no_registry, concurrency, timeout)
        async with contextlib.aclosing(items) as stream:
            async for item in stream:
                if settling is not None and isinstance(item, Check) and item.check == "summary":
                    for check in verifying.policy_checks(plan, *await settling):
                        yield check
                    settling = None
                yield item
    finally:
        if settling is not None:
            settling.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await settling


async def _verify_nodes(
    session: Session,
    plan: Plan,
    rendered: Rendered | None,
    policy: dict[str, Any] | None,
    drivers: list[dict[str, Any]],
    registry: RegistryClient | None,
    no_registry: str,
    concurrency: int,
    timeout: float,
) -> AsyncGenerator[Check | LogLine, None]:
    """Every GPU node's checks, then the summary (every way out ends with one)."""
    gateway = session.gateway
    facts = await session.discover()
    gpu = sorted(facts.gpu_nodes, key=lambda n: n.name)
    if not gpu:
        yield Check("summary", Status.FAIL, "no GPU nodes found (no nvidia.com/gpu.present or NVIDIA PCI label)")
        return
    # CPU-bound for thousands of nodes (the render alone, at 5,000): in a thread, so the loop stays live
    if rendered is None:
        rendered = await asyncio.to_thread(render, plan, facts)
    held = verifying.plan_held(rendered.cluster_policy, rendered.nvidia_drivers, policy, drivers)
    if held is not None:  # nodes compared with images nobody asked for would all fail, for no reason of theirs
        yield held
        yield Check("summary", Status.FAIL, "not verified: the live objects do not hold the plan (see above)")
        return
    choices = await asyncio.to_thread(operator_choices, plan, facts)
    ctx = await verify_context(
        session, plan, rendered, registry=registry, timeout=timeout, policy=policy, choices=choices
    )
    ctx.own_tags = {n.name: n.tag_os(plan.operator.version) for n in gpu}
    ctx.node_labels = facts.labels_by_node()
    if registry is None:
        ctx.no_registry = no_registry or "no registry client was given"
    try:
        pages = verifying.driver_pod_pages(gateway, ctx.namespace)
        async with contextlib.aclosing(verifying.verify_nodes(ctx, gpu, concurrency, pages)) as items:
            async for item in items:
                yield item
    finally:
        session.proved_hosts(ctx.host_ok)
    yield verifying.summary(ctx, len(gpu))


async def _probe_image(session: Session, plan: Plan, policy: dict[str, Any] | None) -> str:
    """The probe pods' image, from the registry the cluster pulls from: a ClusterPolicy under the NVIDIADriver CRD
    keeps no driver manager of its own, and the chart's default at nvcr.io is unreachable behind a private one."""
    release = plan.operator.version
    registry = probe_registry(plan.driver.operandRegistry, (await session.known_preflight()).operator_image, release)
    return manager_image(policy, plan.operator.bundle, registry)


async def verify_context(
    session: Session,
    plan: Plan,
    rendered: Rendered | None,
    *,
    registry: RegistryClient | None,
    timeout: float,
    policy: dict[str, Any] | None = None,
    choices: dict[str, dict[str, str]] | None = None,
) -> verifying.VerifyContext:
    """Everything the node checks share: namespace, expected images, registry digests, driver pods, live paths."""
    namespace = await session.namespace(plan)
    policy = policy or await session.policy()
    expected = {e.node: e.image for e in rendered.node_images} if rendered else {}
    possible = {i for i in expected.values() if i} | {i for c in (choices or {}).values() for i in c.values()}
    digests = await registry.check_many(sorted(possible)) if registry else {}
    toolkit_dir, driver_dir, drop_in = verifying.live_paths(policy)
    return verifying.VerifyContext(
        gateway=session.gateway,
        plan=plan,
        namespace=namespace,
        expected=expected,
        choices=choices or {},
        pods={},
        digests=digests,
        no_registry="",
        toolkit_dir=toolkit_dir,
        driver_dir=driver_dir,
        drop_in=drop_in,
        probe_image=session.probe_image or await _probe_image(session, plan, policy),
        timeout=timeout,
        policy=policy,
    )
