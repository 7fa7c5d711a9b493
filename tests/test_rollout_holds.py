"""The rollout says ready only once the ready holds: apply's "ready" must be what the next look sees.

The real operator wrote ``notReady`` for one pass a second after a ready the follower had confirmed on
fresh lists (the lane's ``test_precompiled_on_two_kernels[v26.3.3]``: apply printed "rollout: ready",
the ClusterPolicy read notReady right after). A confirmed ready is said once nothing the follower
watches has changed for :data:`wizard.cluster.rollouts.rollout.QUIET_S` (or it held for ``SETTLE_S``).

On the demo cluster over HTTPS, with its operator held so that only the test writes the policy's status.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time

from tests.helpers.cluster import connected
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.operator_held import OperatorHeld, write_status
from wizard.cluster.rollouts import rollout
from wizard.cluster.rollouts.rollout import RolloutStatus


async def test_a_ready_is_said_only_once_it_holds_through_the_operators_flap(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    async with connected(demo) as cluster:
        demo.sim.policies.held = True  # type: ignore[attr-defined]
        plan = await cluster.live_plan()
        seen: list[tuple[float, RolloutStatus]] = []
        flap_done = 0.0

        async def follow() -> None:
            async for status in cluster.rollout(plan, interval=0.05, timeout=30):
                seen.append((time.monotonic(), status))

        following = asyncio.create_task(follow())
        while not seen and not following.done():
            await asyncio.sleep(0.02)
        # the operator's one-pass flap, right after the follower first saw the policy ready
        await write_status(cluster, "notReady", dt.datetime.now(dt.UTC))
        await asyncio.sleep(1.0)
        await write_status(cluster, "ready", dt.datetime.now(dt.UTC))
        flap_done = time.monotonic()
        await asyncio.wait_for(following, 30)
    phases = [s.phase for _, s in seen]
    assert phases[-1] == "ready", [(s.phase, s.message) for _, s in seen]
    assert phases.count("ready") == 1, phases  # never a ready before the flap
    said_at = seen[-1][0]
    assert said_at - flap_done >= rollout.QUIET_S - 0.1, (said_at - flap_done, phases)
    assert any("making sure it holds" in s.message for _, s in seen), [s.message for _, s in seen]


async def test_a_ready_that_never_goes_quiet_is_said_after_the_settle_window(demo_cluster: ClusterFactory) -> None:
    """Something the follower watches keeps changing (a busy namespace): the ready is said after SETTLE_S anyway."""
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    async with connected(demo) as cluster:
        demo.sim.policies.held = True  # type: ignore[attr-defined]
        plan = await cluster.live_plan()
        started = time.monotonic()

        async def churn() -> None:  # a ready status written again and again: a change each time (its stamp)
            while True:
                await write_status(cluster, "ready", dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
                await asyncio.sleep(0.5)
                await write_status(cluster, "ready", dt.datetime.now(dt.UTC) - dt.timedelta(hours=2))
                await asyncio.sleep(0.5)

        churning = asyncio.create_task(churn())
        try:
            phases = [s.phase async for s in cluster.rollout(plan, interval=0.05, timeout=30)]
        finally:
            churning.cancel()
    took = time.monotonic() - started
    assert phases[-1] == "ready", phases
    assert rollout.SETTLE_S - 0.5 <= took < rollout.SETTLE_S + 8, took
