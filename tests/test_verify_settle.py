"""Verify does not judge a ClusterPolicy on the one read that lands in the operator's notReady flap.

The real operator wrote ``notReady`` "states not ready: [gpu-feature-discovery]" for one pass, a second
after a ready the rollout had confirmed, and ready again in the same second; the TUI's Verify read the
policy in that second and failed an install that was fine (fresh-clone run 3, docs/real-cluster.md).
A notReady younger than :data:`wizard.cluster.core.operator_status.SETTLE_S` is read again while the nodes are
checked and judged before the summary; an older one is judged at once, in its usual place.

On the demo cluster over HTTPS, with its operator held so that only the test writes the policy's status (the
kubelet and the DaemonSet controller go on: the host probe's pods still start).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cluster import collect, connected
from tests.helpers.fixtures.demo import ClusterFactory
from tests.helpers.operator_held import OperatorHeld, policy_status, write_status
from wizard import requestlog
from wizard.cluster.core.operator_status import turned_not_ready
from wizard.cluster.facade import Cluster
from wizard.cluster.verification import proving
from wizard.engine.results import Check

NOW = dt.datetime(2026, 12, 2, 19, 34, 9, tzinfo=dt.UTC)


def _policy(state: str, since: dt.datetime) -> dict[str, Any]:
    return {"metadata": {"name": "cluster-policy"}, "status": policy_status(state, since)}


@pytest.mark.parametrize(
    ("state", "age", "expected"),
    [
        ("notReady", 1, "cluster-policy turned notReady 1 s ago"),
        ("notReady", -3, "cluster-policy turned notReady 0 s ago"),  # our clock behind the server's
        ("notReady", 10, ""),  # held through two of the operator's passes: a verdict
        ("ready", 1, ""),
    ],
)
def test_only_a_young_not_ready_waits(state: str, age: int, expected: str) -> None:
    policy = _policy(state, NOW - dt.timedelta(seconds=age))
    assert turned_not_ready(policy, [], NOW, 10.0) == expected


def test_a_young_not_ready_nvidia_driver_waits_too() -> None:
    driver = {"metadata": {"name": "sle-micro"}, "status": policy_status("notReady", NOW)}
    assert turned_not_ready(_policy("ready", NOW), [driver], NOW, 10.0) == "sle-micro turned notReady 0 s ago"
    assert turned_not_ready(None, [], NOW, 10.0) == ""
    unstamped = {"metadata": {"name": "cluster-policy"}, "status": {"state": "notReady"}}
    assert turned_not_ready(unstamped, [], NOW, 10.0) == ""  # no flip time: nothing says it is young


async def _verify(cluster: Cluster) -> tuple[list[Check], list[str], float]:
    started = time.monotonic()
    checks, lines = await collect(cluster.verify(await cluster.live_plan()))
    return checks, [line.text for line in lines if not line.node], time.monotonic() - started


async def test_the_operators_one_pass_flap_is_not_a_failure(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    async with connected(demo) as cluster:
        demo.sim.policies.held = True  # type: ignore[attr-defined]
        await write_status(cluster, "notReady", dt.datetime.now(dt.UTC))

        async def next_pass() -> None:
            await asyncio.sleep(1.5)
            await write_status(cluster, "ready", dt.datetime.now(dt.UTC))

        ready_again = asyncio.create_task(next_pass())
        checks, lines, _ = await _verify(cluster)
        await ready_again
    policy = [c for c in checks if c.check == "cluster-policy"]
    assert [c.ok for c in policy] == [True], policy
    assert all(c.ok for c in checks), [c.line() for c in checks if not c.ok]
    assert checks[-1].check == "summary" and checks[-2].check == "cluster-policy"  # judged just before the summary
    assert any("cluster-policy turned notReady" in line and "read again" in line for line in lines), lines


async def test_a_not_ready_that_stays_fails_after_the_window(
    demo_cluster: ClusterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proving, "SETTLE_S", 3.0)
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    async with connected(demo) as cluster:
        demo.sim.policies.held = True  # type: ignore[attr-defined]
        await write_status(cluster, "notReady", dt.datetime.now(dt.UTC))
        checks, _, took = await _verify(cluster)
    policy = [c for c in checks if c.check == "cluster-policy"]
    assert [c.ok for c in policy] == [False], policy
    assert "states not ready: [gpu-feature-discovery]" in policy[0].message
    assert took >= 3.0, took  # it was read again for the whole window


async def test_an_old_not_ready_is_judged_at_once_in_its_place(demo_cluster: ClusterFactory) -> None:
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    async with connected(demo) as cluster:
        demo.sim.policies.held = True  # type: ignore[attr-defined]
        await write_status(cluster, "notReady", dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
        checks, lines, _ = await _verify(cluster)
    assert checks[0].check == "cluster-policy" and not checks[0].ok, checks[0]
    assert not any("read again" in line for line in lines)


async def test_the_window_is_followed_by_watch_not_read_again_each_second(
    demo_cluster: ClusterFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Issue 38: the settling policy is followed by the session's watch of the ClusterPolicies (and a watch of the
    namespace's pods for a pull that cannot succeed), never listed again on a timer; the old loop listed the
    policies and the Pending pods every second of the window. Counted in the product's request log."""
    monkeypatch.setattr(proving, "SETTLE_S", 3.0)
    log = tmp_path / "requests.log"
    monkeypatch.setenv(requestlog.ENV, str(log))
    requestlog.configure()
    demo = demo_cluster("existing-install-plain", simulation=OperatorHeld)
    try:
        async with connected(demo) as cluster:
            demo.sim.policies.held = True  # type: ignore[attr-defined]
            await write_status(cluster, "notReady", dt.datetime.now(dt.UTC))
            checks, _, took = await _verify(cluster)
    finally:
        requestlog.close()
    assert took >= 3.0 and not checks[-2].ok, took  # the whole window, then the verdict
    requests = log.read_text().splitlines()
    policy_lists = [r for r in requests if " GET " in r and re.search(r"/clusterpolicies(\?| )", r)]
    # the session's one list, the preflight live_plan runs, Verify's own fresh read (the old loop: 7 and more)
    assert len(policy_lists) <= 3, policy_lists
    assert not [r for r in requests if "status.phase%3DPending" in r or "status.phase=Pending" in r]
