"""The upgrade plan: what a new driver version (or operator release) changes, node group by node group.

Pure: given the running plan (read back from the live ClusterPolicy), the target plan and the node
facts, it says which node groups change image (old → new, with the OS-tag changes a new release's
naming rules bring), which upgradePolicy governs the rollout (validated), which GPU workloads the
driver upgrade evicts from which node, and about how long it takes. The registry status of both
images is added by the caller (:mod:`wizard.registry.images`): this module decides nothing that needs I/O.
A node whose kernel no longer fits its precompiled driver is :mod:`wizard.engine.kernel_drift`'s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.engine.facts import ClusterFacts
from wizard.engine.mirror import NodeImage
from wizard.engine.plan import Plan
from wizard.engine.upgradestates import UPGRADE_DONE, UPGRADE_FAILED, UPGRADE_STATES

PERCENT_RE = re.compile(r"^(100|[1-9]?[0-9])%$")
DEFAULT_NODE_MINUTES = 6.0
"""Minutes one node takes to upgrade when nothing slows it: cordon, drain, driver pod restart
(image pull, module load) and validation. A guess from the operator's defaults, said as such."""


class UpgradePolicyError(ValueError):
    """An upgradePolicy value the operator would reject; names the field and what is valid."""


@dataclass(frozen=True)
class UpgradePolicy:
    """``spec.driver.upgradePolicy`` as the operator's upgrade controller reads it."""

    auto_upgrade: bool = True
    max_parallel_upgrades: int = 1
    """0 means no limit (all nodes at once)."""
    max_unavailable: str = "25%"
    drain_enabled: bool = False
    drain_timeout_seconds: int = 300
    pod_deletion_timeout_seconds: int = 300
    wait_for_completion_timeout_seconds: int = 0

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> UpgradePolicy:
        """Read (and validate) ``spec.driver.upgradePolicy``; missing fields take the operator's defaults."""
        spec = spec or {}
        drain = spec.get("drain") or {}
        deletion = spec.get("podDeletion") or spec.get("gpuPodDeletion") or {}
        waiting = spec.get("waitForCompletion") or {}
        policy = cls(
            auto_upgrade=spec.get("autoUpgrade", True) is not False,
            max_parallel_upgrades=_int(spec.get("maxParallelUpgrades", 1), "maxParallelUpgrades"),
            max_unavailable=str(spec.get("maxUnavailable", "25%")),
            drain_enabled=drain.get("enable", False) is True,
            drain_timeout_seconds=_int(drain.get("timeoutSeconds", 300), "drain.timeoutSeconds"),
            pod_deletion_timeout_seconds=_int(deletion.get("timeoutSeconds", 300), "podDeletion.timeoutSeconds"),
            wait_for_completion_timeout_seconds=_int(
                waiting.get("timeoutSeconds", 0), "waitForCompletion.timeoutSeconds"
            ),
        )
        policy.validate()
        return policy

    def validate(self) -> None:
        """UpgradePolicyError naming the first invalid field."""
        if self.max_parallel_upgrades < 0:
            raise UpgradePolicyError("upgradePolicy.maxParallelUpgrades: must be 0 (no limit) or a positive integer")
        text = self.max_unavailable
        if not (text.isascii() and (text.isdigit() or PERCENT_RE.match(text))):
            raise UpgradePolicyError(
                f"upgradePolicy.maxUnavailable: {text!r} is not a node count or a percentage like 25%"
            )
        for name, value in (
            ("drain.timeoutSeconds", self.drain_timeout_seconds),
            ("podDeletion.timeoutSeconds", self.pod_deletion_timeout_seconds),
            ("waitForCompletion.timeoutSeconds", self.wait_for_completion_timeout_seconds),
        ):
            if value < 0:
                raise UpgradePolicyError(f"upgradePolicy.{name}: must be 0 or more seconds")

    def stall_seconds(self) -> float | None:
        """How long a rollout may show no change before it is called stalled, from this policy's timeouts.

        The longest wait the policy allows in one state (drain, GPU pod deletion, waiting for jobs)
        plus one node's ordinary upgrade time; None where a timeout of 0 lets the operator wait forever
        (then only the rollout's overall limit applies).
        """
        waits = [self.pod_deletion_timeout_seconds, self.wait_for_completion_timeout_seconds]
        if self.drain_enabled:
            waits.append(self.drain_timeout_seconds)
        if 0 in waits:
            return None
        return float(max(waits)) + DEFAULT_NODE_MINUTES * 60

    def unavailable_limit(self, nodes: int) -> int:
        """How many nodes may be unavailable at once (the percentage rounded up, as the operator does)."""
        text = self.max_unavailable
        if text.endswith("%"):
            return max(1, math.ceil(nodes * int(text[:-1]) / 100)) if nodes else 0
        return int(text)

    def parallel(self, nodes: int) -> int:
        """Nodes upgraded at once: maxParallelUpgrades (0 = all), capped by maxUnavailable."""
        limit = nodes if self.max_parallel_upgrades == 0 else min(nodes, self.max_parallel_upgrades)
        return max(1, min(limit, self.unavailable_limit(nodes))) if nodes else 0


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UpgradePolicyError(f"upgradePolicy.{name}: {value!r} is not an integer")
    return value


@dataclass(frozen=True)
class InProgress:
    """A driver upgrade the operator is carrying out now: GPU nodes per upgrade state, the failed ones' reasons."""

    nodes: dict[str, list[str]]
    """upgrade state -> GPU nodes in it (states in :data:`UPGRADE_STATES` order, empty ones left out)."""
    rolling_out: str
    """The driver version the live policy asks for (what the nodes are upgrading to)."""
    failed: dict[str, str] = field(default_factory=dict)
    """upgrade-failed node -> why, from its driver pod."""
    evictions: dict[str, list[str]] = field(default_factory=dict)
    """GPU workload pods on nodes the upgrade under way has not emptied yet (it evicts them next)."""

    @property
    def total(self) -> int:
        return sum(len(nodes) for nodes in self.nodes.values())

    @property
    def in_flight(self) -> list[str]:
        return sorted(
            n for state, nodes in self.nodes.items() if state not in (UPGRADE_DONE, UPGRADE_FAILED) for n in nodes
        )

    @property
    def summary(self) -> str:
        """``Upgrade in progress to driver V: D of T GPU node(s) done`` (Connect and Nodes; Apply adds the states)."""
        done = len(self.nodes.get("upgrade-done", []))
        return f"Upgrade in progress to driver {self.rolling_out}: {done} of {self.total} GPU node(s) done"

    def lines(self, target_version: str) -> list[str]:
        """What is under way, per state, and what applying ``target_version`` now would do."""
        done = len(self.nodes.get("upgrade-done", []))
        counts = " · ".join(f"{state} {len(nodes)}" for state, nodes in self.nodes.items())
        out = [f"{self.summary} · {counts}"]
        for node, why in sorted(self.failed.items()):
            out.append(f"  upgrade-failed: {node}: {why}")
        moving = len(self.in_flight)
        if target_version == self.rolling_out:
            now = (
                f"Applying now changes nothing in flight: the operator goes on with the same upgrade ({moving} node(s) "
                "on their way)"
            )
        else:
            now = (
                f"Applying now changes the target mid-way: {done} node(s) already on {self.rolling_out} are upgraded "
                f"again to {target_version}; {moving} node(s) in progress restart their driver with the new image"
            )
        if self.failed:
            now += "; failed nodes stay failed until their driver pod can start (fix the cause first)"
        out.append(now)
        for node, pods in sorted(self.evictions.items()):
            out.append(f"  still to be evicted on {node}: {', '.join(pods)}")
        return out


#: States before the operator empties a node of its GPU pods: its workloads are still to be evicted.
BEFORE_EVICTION = frozenset(UPGRADE_STATES[:5])


def upgrade_in_progress(
    facts: ClusterFacts,
    rolling_out: str,
    pod_problems: Mapping[str, str] | None = None,
    workloads: Mapping[str, list[str]] | None = None,
) -> InProgress | None:
    """The upgrade under way, from the GPU nodes' upgrade-state labels (None when every node is done or never started)."""
    by_state: dict[str, list[str]] = {}
    for node in facts.gpu_nodes:
        if node.upgrade_state:
            by_state.setdefault(node.upgrade_state, []).append(node.name)
    if not set(by_state) - {"upgrade-done"}:
        return None
    order = {state: i for i, state in enumerate(UPGRADE_STATES)}
    nodes = {state: sorted(by_state[state]) for state in sorted(by_state, key=lambda s: order.get(s, len(order)))}
    problems = pod_problems or {}
    failed = {node: problems.get(node) or "no reason found on its driver pod" for node in nodes.get(UPGRADE_FAILED, [])}
    waiting = {n for state in BEFORE_EVICTION for n in nodes.get(state, [])}
    evictions = {node: sorted(pods) for node, pods in (workloads or {}).items() if node in waiting and pods}
    return InProgress(nodes, rolling_out, failed, evictions)


@dataclass(frozen=True)
class GroupChange:
    """One node group (same kernel and OS tag) and the driver image it moves between."""

    kernel: str
    nodes: tuple[str, ...]
    old_image: str
    new_image: str
    old_os_tag: str
    new_os_tag: str

    @property
    def changes(self) -> bool:
        return self.old_image != self.new_image


@dataclass
class UpgradePlan:
    """Everything an admin should see before a driver upgrade starts."""

    current: Plan
    target: Plan
    groups: list[GroupChange]
    policy: UpgradePolicy
    evictions: dict[str, list[str]] = field(default_factory=dict)
    """GPU workload pods (``namespace/name``) per changing node: the upgrade evicts them."""
    notes: list[str] = field(default_factory=list)
    in_progress: InProgress | None = None
    """An upgrade the operator is carrying out now (read from the nodes' upgrade-state labels)."""

    @property
    def changing_nodes(self) -> list[str]:
        return sorted(n for g in self.groups if g.changes for n in g.nodes)

    def estimate_minutes(self, node_minutes: float = DEFAULT_NODE_MINUTES) -> float:
        """Rough duration: waves of ``parallel`` nodes, each wave ``node_minutes`` (plus drain waits when on)."""
        nodes = len(self.changing_nodes)
        if not nodes:
            return 0.0
        per_node = node_minutes
        if self.policy.drain_enabled and self.evictions:
            per_node += self.policy.drain_timeout_seconds / 60 / 2  # drains rarely take their whole timeout
        waves = math.ceil(nodes / self.policy.parallel(nodes))
        return round(waves * per_node, 1)

    def os_tag_changes(self) -> list[str]:
        """Lines naming OS tags the target release writes differently (e.g. ``rhel9.4`` → ``rhel9``)."""
        seen = sorted({(g.old_os_tag, g.new_os_tag) for g in self.groups if g.old_os_tag != g.new_os_tag})
        release = self.target.operator.version
        return [f"{old} → {new} (the naming rule of operator {release})" for old, new in seen]


def plan_upgrade(
    current: Plan,
    target: Plan,
    current_images: list[NodeImage],
    target_images: list[NodeImage],
    policy_spec: Mapping[str, Any] | None,
    workloads: Mapping[str, list[str]] | None = None,
) -> UpgradePlan:
    """Compare the images each GPU node runs now and after the upgrade, grouped by (kernel, old, new)."""
    before = {entry.node: entry for entry in current_images}
    grouped: dict[tuple[str, str, str, str, str], list[str]] = {}
    for entry in target_images:
        old = before.get(entry.node)
        key = (
            entry.kernel,
            old.image if old else "",
            entry.image,
            old.tag_os if old else "",
            entry.tag_os,
        )
        grouped.setdefault(key, []).append(entry.node)
    groups = [
        GroupChange(kernel, tuple(sorted(nodes)), old_image, new_image, old_os, new_os)
        for (kernel, old_image, new_image, old_os, new_os), nodes in sorted(grouped.items())
    ]
    plan = UpgradePlan(current, target, groups, UpgradePolicy.from_spec(policy_spec))
    changing = set(plan.changing_nodes)
    plan.evictions = {node: sorted(pods) for node, pods in (workloads or {}).items() if node in changing and pods}
    if not plan.policy.auto_upgrade:
        plan.notes.append(
            "upgradePolicy.autoUpgrade is false: the operator will not roll the new driver out by itself; each "
            "driver pod must be deleted by hand (node by node) after the apply"
        )
    if plan.evictions and not plan.policy.drain_enabled:
        plan.notes.append(
            "GPU workloads run on nodes that change: with drain off, the operator deletes only the pods that use "
            "GPUs (podDeletion) before the driver restarts"
        )
    return plan


def plan_policy(plan: Plan) -> UpgradePolicy | None:
    """The upgradePolicy the plan sets (None: the plan leaves the live one alone)."""
    spec = plan.driver.upgradePolicy
    return UpgradePolicy.from_spec(spec.cr_form()) if spec is not None and plan.driver_enabled else None


def with_upgrade_policy(plan: Plan, changes: Mapping[str, Any], live_spec: Mapping[str, Any] | None) -> Plan:
    """The plan with some upgradePolicy fields changed (dotted keys: ``drain.enable``), validated.

    The rest of the policy comes from the plan when it sets one, else from the live policy
    (``live_spec``, the CRD form), else the chart's defaults: changing one field never resets the
    others. ValidationError (naming ``driver.upgradePolicy.<field>``) for a bad value.
    """
    if not changes:
        return plan
    from wizard.engine.plan import upgrade_policy_answers

    spec = plan.driver.upgradePolicy
    base: dict[str, Any] = spec.cr_form() if spec is not None else upgrade_policy_answers(dict(live_spec or {}))
    for dotted, value in changes.items():
        node = base
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    answers = plan.answers_dict()
    answers["driver"]["upgradePolicy"] = base
    return Plan.model_validate(answers)


def upgrade_target(current: Plan, *, driver_version: str, operator_release: str | None = None) -> Plan:
    """The running plan with a new driver version (and operator release), validated like any answers."""
    answers = current.answers_dict()
    answers.setdefault("driver", {})["version"] = driver_version
    if operator_release:
        answers.setdefault("operator", {})["version"] = operator_release
    return Plan.model_validate(answers)


def gpu_requests(pod: Mapping[str, Any]) -> int:
    """GPUs a pod asks for (``nvidia.com/gpu`` limits or requests of its containers; MIG resources too)."""
    total = 0
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for section in ("limits", "requests"):
            for name, value in (resources.get(section) or {}).items():
                if str(name) == "nvidia.com/gpu" or str(name).startswith("nvidia.com/mig-"):
                    try:
                        total = max(total, int(str(value)))
                    except ValueError:
                        continue
    return total


def workloads_by_node(pods: Sequence[Mapping[str, Any]], facts: ClusterFacts) -> dict[str, list[str]]:
    """``namespace/name`` of running pods that use GPUs, per GPU node."""
    gpu_nodes = {n.name for n in facts.gpu_nodes}
    out: dict[str, list[str]] = {}
    for pod in pods:
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        phase = str((pod.get("status") or {}).get("phase") or "")
        if node in gpu_nodes and phase in ("Running", "Pending") and gpu_requests(pod) > 0:
            meta = pod.get("metadata") or {}
            out.setdefault(node, []).append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
    return out
