"""What every GPU node's verification shares: the driver pods (summarised) and the context of one run.

:class:`VerifyContext` carries the plan, the expected image per node, the registry's digests, the live
install paths and the host probe's per-node results, and counts what passed, failed and was SKIPPED
(:mod:`wizard.cluster.verification.verify` runs the nodes; :mod:`wizard.cluster.verification.verify_node` checks one).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard.cluster.gateway import Gateway
from wizard.cluster.probes.hostprobe import HostRun, host_findmnt
from wizard.cluster.probes.probe import Leftover
from wizard.engine.nodescript import Step
from wizard.engine.operator_names import DRIVER_CONTAINER
from wizard.engine.plan import Plan
from wizard.engine.results import Check
from wizard.registry.client import TagStatus


@dataclass(frozen=True)
class DriverPod:
    """What verification needs from one driver pod (kept instead of the whole object: 5,000 pods add up)."""

    name: str
    node: str
    image: str
    """``nvidia-driver-ctr``'s spec image."""
    image_id: str
    state: str
    """``running``, ``waiting``, ``terminated`` or "" (no status yet)."""
    why: str
    daemonset: str = ""
    """The DaemonSet that owns the pod ("" for none)."""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> DriverPod:
        containers = (pod.get("spec") or {}).get("containers") or []
        spec: dict[str, Any] = next((c for c in containers if c.get("name") == DRIVER_CONTAINER), {})
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        status: dict[str, Any] = next((c for c in statuses if c.get("name") == DRIVER_CONTAINER), {})
        states = status.get("state") or {}
        state = next((k for k in ("running", "waiting", "terminated") if k in states), "")
        detail = states.get(state) or {}
        why = f"{detail.get('reason') or state or 'not started'}: {detail.get('message') or ''}".rstrip(": ")
        if state != "running":  # the driver container waits on an init container: name the one that fails
            why += _failing_init((pod.get("status") or {}).get("initContainerStatuses") or [])
        return cls(
            name=str(pod["metadata"]["name"]),
            node=str((pod.get("spec") or {}).get("nodeName") or ""),
            image=str(spec.get("image") or ""),
            image_id=str(status.get("imageID") or ""),
            state=state,
            why=why,
            daemonset=next(
                (
                    str(r.get("name") or "")
                    for r in (pod.get("metadata") or {}).get("ownerReferences") or []
                    if isinstance(r, dict) and r.get("kind") == "DaemonSet"
                ),
                "",
            ),
        )


def _failing_init(statuses: list[Any]) -> str:
    """`` (init container NAME: REASON: MESSAGE)`` of the first init container waiting on a failure, or ""."""
    for status in statuses:
        waiting = ((status or {}).get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason") or "")
        if reason and reason not in ("PodInitializing", "ContainerCreating"):
            detail = f"{reason}: {waiting.get('message') or ''}".rstrip(": ")
            return f" (init container {status.get('name') or '?'}: {detail})"
    return ""


@dataclass
class VerifyContext:
    """What every node's checks share."""

    gateway: Gateway
    plan: Plan
    namespace: str
    expected: dict[str, str]
    """Node -> the driver image the node should run (rendered)."""
    pods: dict[str, DriverPod]
    digests: dict[str, TagStatus]
    """Image -> the registry's answer (empty without a registry client)."""
    no_registry: str
    """Why no registry was asked ("" when one was): every digest check is SKIPPED with this reason."""
    toolkit_dir: str
    driver_dir: str
    drop_in: str
    probe_image: str
    timeout: float
    policy: dict[str, Any] | None = None
    """The active ClusterPolicy as the session read it (the host probe's tolerations come from it)."""
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    failed: set[str] = field(default_factory=set)
    host_ok: set[str] = field(default_factory=set)
    """Nodes whose host ``nvidia-smi`` passed (pre-installed mode)."""
    passed: int = 0
    """Node checks that passed (warnings included: they ran)."""
    skipped: list[Check] = field(default_factory=list)
    """Node checks that could not run: never counted as passed."""
    leftovers: dict[str, Leftover] = field(default_factory=dict)
    """Probe objects that could not be deleted, by name (reported as warnings naming ``kubectl delete``)."""
    hosts: dict[str, asyncio.Future[HostRun]] = field(default_factory=dict)
    """Node -> its host probe result, set as the probe run delivers it."""
    node_labels: Mapping[str, Mapping[str, str]] | None = None
    """Every node's labels, by name (``ClusterFacts.labels_by_node``): the host probe selects by a GPU label where it fits."""

    def host_steps(self) -> list[Step]:
        """The steps every node's host runs: findmnt of the toolkit binary (and the driver root), the drop-in's
        ``BinaryName``; in pre-installed mode the host's ``nvidia-smi`` first."""
        runtime = f"{self.toolkit_dir}/toolkit/nvidia-container-runtime"
        driver = self.plan.driver_enabled or bool(self.plan.hostPaths.driverInstallDir)
        steps = [] if self.plan.driver_enabled else [Step("host-nvidia-smi", ("nvidia-smi",), host=True, stream=True)]
        steps.append(Step("toolkit-path", host_findmnt(runtime), host=True))
        if driver:
            steps.append(Step("driver-path", host_findmnt(self.driver_dir), host=True))
        steps.append(Step("containerd-config", ("grep", "BinaryName", self.drop_in), host=True))
        return steps

    def host_result(self, node: str) -> asyncio.Future[HostRun]:
        if node not in self.hosts:
            self.hosts[node] = asyncio.get_running_loop().create_future()
        return self.hosts[node]

    choices: dict[str, dict[str, str]] = field(default_factory=dict)
    """Mixed-OS ClusterPolicy: node -> {OS tag the operator may pick -> image} (:func:`operator_choices`)."""
    own_tags: dict[str, str] = field(default_factory=dict)
    """Node -> its own OS tag (for the mixed-OS verdict)."""
