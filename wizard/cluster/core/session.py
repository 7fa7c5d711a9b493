"""One connected cluster's session: what every cluster implementation is handed instead of the facade.

A :class:`Session` holds the gateway (the one request path), the session's watch caches
(:class:`wizard.cluster.core.caches.Caches`: one list and one watch per kind for every follower, step and check),
what the session has read once and reuses (the last preflight, the nodes as facts) and what it has proved
(:attr:`Session.host_verified`). The facade (:class:`wizard.cluster.facade.Cluster`) owns one and keeps the
front ends' methods; the modules that do the work (proving, rollout, diagnose, hostcheck, pathcheck, support,
upgrades, live_findings, probe_cleanup) take the session, so none of them imports or changes the facade (an
import contract in pyproject.toml keeps it so).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from wizard.cluster.core.caches import Caches, Feed
from wizard.cluster.core.discovery import NodeDirectory
from wizard.cluster.core.liveplan import plan_from_live
from wizard.cluster.core.preflight import DRIVERS, POLICY, Preflight, active_policy, run_preflight
from wizard.cluster.core.rollout_cache import without_managed_fields
from wizard.cluster.errors import ApiError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import ClusterFacts
from wizard.engine.plan import Plan


class Session:
    """The gateway, the watch caches, and what this session has read and proved of one cluster."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.caches = Caches(gateway)
        """The session's watch caches, by kind, namespace and selector: each kind listed once and watched once."""
        self.nodes = NodeDirectory(self.caches)
        self.found: Preflight | None = None
        """The last preflight's answer (None: none yet, or an operator install changed what it read)."""
        self.host_verified: set[str] = set()
        """GPU nodes whose host nvidia-smi passed in this session (pre-installed mode)."""
        self.probe_image = ""
        """Image of the host probe pods; empty: the live driver-manager image, else the release default."""

    async def close(self) -> None:
        """Stop the session's watches (the gateway is closed by its owner)."""
        await self.caches.close()

    def proved_hosts(self, nodes: Iterable[str]) -> None:
        """Remember GPU nodes whose host's own nvidia-smi passed (a pre-installed apply may go on them)."""
        self.host_verified.update(nodes)

    async def preflight(self, plan: Plan | None = None, *, install_operator: bool = False) -> Preflight:
        """Run preflight (see ``Cluster.preflight``) and remember its answer."""
        self.found = await run_preflight(self.gateway, plan, install_operator=install_operator)
        return self.found

    def forget_preflight(self) -> None:
        """CRDs, operator and policy changed (an operator install): the next look reads them again."""
        self.found = None

    async def known_preflight(self) -> Preflight:
        """The last preflight's answer (running it once when none ran yet)."""
        return self.found or await self.preflight()

    async def namespace(self, plan: Plan | None = None) -> str:
        """The operator namespace: the live ClusterPolicy's ``status.namespace``, else what preflight found."""
        live = str(((await self.policy() or {}).get("status") or {}).get("namespace") or "")
        return live or (self.found or await self.preflight(plan)).operator_namespace

    def policy_feed(self) -> Feed[dict[str, Any]]:
        """The session's one list and watch of the ClusterPolicies (a handful of objects)."""
        return self.caches.feed(POLICY, slim=without_managed_fields)

    async def policies(self) -> list[dict[str, Any]]:
        """The ClusterPolicies as the session's watch keeps them (listed once, on the first read); [] while their CRD
        is missing (no operator yet: each read asks again). Copies: a reader may change what it is handed."""
        try:
            objects = await self.policy_feed().current()
        except ApiError as exc:
            if exc.status != 404:
                raise
            return []
        return [copy.deepcopy(objects[name]) for name in sorted(objects)]

    async def policy(self) -> dict[str, Any] | None:
        """The active ClusterPolicy (:func:`~wizard.cluster.core.preflight.active_policy`) as the session knows it."""
        return active_policy(await self.policies())

    async def discover(self) -> ClusterFacts:
        """Every node as facts (see ``Cluster.discover``)."""
        return await self.nodes.discover()

    async def live_plan(self) -> Plan:
        """The plan the cluster runs now (live ClusterPolicy and default NVIDIADriver)."""
        policy = await self.policy()
        drivers = await self.gateway.list_custom(*DRIVERS)
        found = self.found or await self.preflight()
        return plan_from_live(policy, drivers, release=found.operator_release, namespace=found.operator_namespace)
