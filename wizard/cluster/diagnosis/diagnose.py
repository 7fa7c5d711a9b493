"""Diagnosis after a failure: why a GPU node's driver, toolkit or validator pod is not ready, in the operator's own words.

For every failing GPU node (its driver pod not ready, crash-looping or stuck pulling; or, without a failing
driver pod, its container toolkit pod not ready; or else its validator pod not ready) this gathers what a
support engineer reads first: the driver pod's ``k8s-driver-manager`` and ``nvidia-driver-ctr`` logs (the
previous run too, last :data:`TAIL_LINES` lines), the toolkit's failing container log, the containers'
waiting/terminated messages, the pod's events, the validator's failing init container log and the node's
``nvidia.com/gpu-driver-upgrade-state`` label; then matches it against the known failure signatures
(:mod:`wizard.engine.failures`). The first failing pod of a node in that order is its story: the validator
waits for the driver and the toolkit, so its state is a note beside theirs.

Bounded at scale: failing pods are grouped first by what the pod list already tells (owner DaemonSet,
image, state, the failing container's last exit code and message, the node's kernel), and logs are
read for :data:`REPRESENTATIVES` pods per group (the first by node name); one more check names the
group's other nodes, which probably fail the same way (a host difference the pod list cannot show,
such as Secure Boot on some nodes only, hides there: diagnose those nodes by name to be sure).
5,000 nodes failing alike cost a handful of log reads.
Only pods, events, nodes and logs are read: never a Secret.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import LABEL_UPGRADE_STATE, NodeFacts
from wizard.engine.failures import Evidence, Finding, last_lines, match
from wizard.engine.operator_names import (
    DRIVER_CONTAINER,
    DRIVER_SELECTOR,
    MANAGER_CONTAINER,
    TOOLKIT_CONTAINER,
    TOOLKIT_SELECTOR,
    VALIDATOR_SELECTOR,
)
from wizard.engine.results import Check, Status
from wizard.engine.textsafe import printable, shell_command

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session
    from wizard.engine.plan import Plan

TAIL_LINES = 200
REPRESENTATIVES = 3
"""Pods per group whose logs and events are read (the group's other nodes share its state)."""
CONCURRENCY = 8
EVENTS = 20
"""Last events kept per pod."""
NAMED_NODES = 50
"""Nodes named in a group's summary check (the count says the rest)."""


@dataclass
class FailingPod:
    """What diagnosis keeps of one failing pod (5,000 of them stay small)."""

    name: str
    node: str
    kind: str
    """``driver``, ``toolkit`` or ``validator``."""
    owner: str
    image: str
    state: str
    """The first unhealthy container's state: ``CrashLoopBackOff``, ``ImagePullBackOff``, ``Error``, ``running (not ready)``…"""
    containers: list[tuple[str, int]] = field(default_factory=list)
    """``(container, restarts)`` whose logs tell the story, in the order they run."""
    status_lines: list[Evidence] = field(default_factory=list)
    validator: str = ""
    """For a driver pod: its node's validator pod and where it waits (``nvidia-operator-validator-x: Init…``)."""
    exit: str = ""
    """The failing container's last exit: code, reason and message (pods failing alike share it)."""
    kernel: str = ""

    @property
    def group(self) -> tuple[str, ...]:
        """What pods failing the same way share: kind, owner, image, state, last exit, the node's kernel."""
        return (self.kind, self.owner, self.image, self.state, self.exit, self.kernel)


def _statuses(pod: Mapping[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    status = pod.get("status") or {}
    init = [(cs, True) for cs in status.get("initContainerStatuses") or []]
    return init + [(cs, False) for cs in status.get("containerStatuses") or []]


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _container_state(cs: Mapping[str, Any], init: bool) -> str:
    """ "" when the container is fine (running and ready, or an init container that completed)."""
    state = cs.get("state") or {}
    if "waiting" in state:
        return str((state["waiting"] or {}).get("reason") or "waiting")
    if "terminated" in state:
        term = state["terminated"] or {}
        if init and term.get("exitCode") == 0:
            return ""
        return str(term.get("reason") or "terminated")
    if "running" in state:  # an init container that still runs is what the pod waits on
        return "running (not done)" if init else ("" if cs.get("ready") else "running (not ready)")
    return "not started"


def failing_pod(pod: Mapping[str, Any], kind: str) -> FailingPod | None:
    """The pod's failure summary, or None when it is ready (or being deleted)."""
    meta = pod.get("metadata") or {}
    if _ready(pod) or meta.get("deletionTimestamp"):
        return None
    owner = next((str(o.get("name") or "") for o in meta.get("ownerReferences") or []), "")
    spec = pod.get("spec") or {}
    main = {str(c.get("name")): str(c.get("image") or "") for c in spec.get("containers") or []}
    image = main.get(DRIVER_CONTAINER) or next(iter(main.values()), "")
    found = FailingPod(str(meta.get("name") or ""), str(spec.get("nodeName") or ""), kind, owner, image, "")
    for cs, init in _statuses(pod):
        name = str(cs.get("name") or "")
        restarts = int(cs.get("restartCount") or 0)
        state = _container_state(cs, init)
        for when, detail in [*(cs.get("state") or {}).items(), *(cs.get("lastState") or {}).items()]:
            message = str((detail or {}).get("message") or "")
            if message:
                found.status_lines.append(Evidence("status", f"{name} {when}", message))
        wanted = name in (MANAGER_CONTAINER, DRIVER_CONTAINER) if kind == "driver" else bool(state)
        if wanted and (state or restarts or name == MANAGER_CONTAINER):
            found.containers.append((name, restarts))
        if state and not found.state:
            found.state = state
            last = (cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated") or {}
            if last:
                message = str(last.get("message") or "")[:200]
                found.exit = f"{last.get('exitCode')} {last.get('reason') or ''} {message}"
            if kind != "driver":
                break  # later containers have not run (init) or are not the story: their logs say nothing
    found.state = found.state or "not ready"
    return found


def _lines(text: str, origin: str) -> list[Evidence]:
    return [Evidence("log", origin, line) for line in text.splitlines()[-TAIL_LINES:]]


async def _evidence(gateway: Gateway, namespace: str, pod: FailingPod, node: NodeFacts | None) -> list[Evidence]:
    """Everything gathered for one representative pod: container messages, logs, events, the label."""
    found = list(pod.status_lines)
    for container, restarts in pod.containers:
        runs = [False, True] if restarts else [False]
        for previous in runs:
            origin = f"{container}{' (previous)' if previous else ''}"
            try:
                text = await gateway.read_log(namespace, pod.name, container, tail_lines=TAIL_LINES, previous=previous)
            except ClusterError as exc:  # not started yet, or no previous run: the API server says so
                found.append(Evidence("status", origin, f"log not available: {exc.message}"))
                continue
            found.extend(_lines(text, origin))
    with contextlib.suppress(ClusterError):  # events are an extra: RBAC may not allow them
        events = await gateway.list_events(namespace, field_selector=f"involvedObject.name={pod.name}")
        for event in events[-EVENTS:]:
            reason = str(event.get("reason") or "")
            found.append(Evidence("event", f"event {reason}".strip(), str(event.get("message") or "")))
    state = node.upgrade_state if node is not None else ""
    if state:
        found.append(Evidence("label", LABEL_UPGRADE_STATE, state))
    return found


def finding_check(
    pod: FailingPod, findings: list[Finding], evidence: list[Evidence], group_size: int, namespace: str = "<namespace>"
) -> Check:
    """One ``diagnosis`` check for a representative pod: its known failures, else its last log lines."""
    base = {
        "pod": pod.name,
        "kind": pod.kind,
        "owner": pod.owner,
        "image": pod.image,
        "state": pod.state,
        "group_size": group_size,
        "validator": pod.validator,
    }
    where = f"{pod.kind} pod {printable(pod.name)} ({printable(pod.state)})"
    if findings:
        first = findings[0]
        sig = first.signature
        lines = [line.shown() for f in findings for line in f.lines]
        others = f"; also: {', '.join(f.signature.title for f in findings[1:])}" if len(findings) > 1 else ""
        return Check(
            "diagnosis",
            Status.FAIL,
            f"{where}: {sig.title} ({sig.issue}){others}",
            node=pod.node,
            hint=first.fix,
            detail="\n".join(lines),
            data={**base, "matched": True, "findings": [f.as_dict() for f in findings], "lines": lines},
        )
    tail = [e.shown() for e in (last_lines(evidence) or [e for e in evidence if e.source == "status"][-5:])]
    return Check(
        "diagnosis",
        Status.FAIL,
        f"{where}: no known failure signature matched; its last log lines follow",
        node=pod.node,
        hint=f"read the whole log: {shell_command(['kubectl', 'logs', '-n', namespace, pod.name, '--all-containers'])}"
        + (" (add --previous for the run before)" if any(restarts for _, restarts in pod.containers) else ""),
        detail="\n".join(tail),
        data={**base, "matched": False, "findings": [], "lines": tail},
    )


def group_check(members: list[FailingPod], shown: int) -> Check:
    """The rest of a group: how many nodes share the representatives' state (their logs were not read)."""
    first = members[0]
    rest = sorted(m.node for m in members[shown:])
    named = ", ".join(rest[:10]) + (f" and {len(rest) - 10} more" if len(rest) > 10 else "")
    return Check(
        "diagnosis",
        Status.FAIL,
        f"{len(rest)} more nodes have a {first.kind} pod of {printable(first.owner or 'no owner')} in the same state "
        f"({printable(first.state)}, {printable(first.image)}, same last exit and kernel): logs were read from "
        f"{shown} representative pods above; these were not read and probably fail the same way "
        f"(diagnose one by its node to be sure): {printable(named)}",
        data={"group_size": len(members), "representatives": shown, "nodes": rest[:NAMED_NODES], "owner": first.owner},
    )


async def _failing_pods(
    gateway: Gateway, namespace: str, selector: str, kind: str, gpu: Mapping[str, NodeFacts], only: set[str] | None
) -> list[FailingPod]:
    found: list[FailingPod] = []
    async with contextlib.aclosing(gateway.pod_pages(namespace, label_selector=selector)) as pages:
        async for page, _ in pages:
            for pod in page:
                node = str((pod.get("spec") or {}).get("nodeName") or "")
                if node not in gpu or (only is not None and node not in only):
                    continue
                failing = failing_pod(pod, kind)
                if failing is not None:
                    failing.kernel = gpu[node].kernel
                    found.append(failing)
    return found


async def diagnose(
    gateway: Gateway,
    namespace: str,
    gpu: Mapping[str, NodeFacts],
    *,
    only: set[str] | None = None,
    representatives: int = REPRESENTATIVES,
) -> AsyncGenerator[Check, None]:
    """``diagnosis`` checks for the failing GPU nodes (``only``: these), then one ``diagnosis-summary``."""
    drivers = await _failing_pods(gateway, namespace, DRIVER_SELECTOR, "driver", gpu, only)
    with_driver = {p.node for p in drivers}
    toolkits = [  # the toolkit's own failure only: one still waiting for the driver is the driver's (or host's) story
        t
        for t in await _failing_pods(gateway, namespace, TOOLKIT_SELECTOR, "toolkit", gpu, only)
        if t.node not in with_driver and [name for name, _ in t.containers] == [TOOLKIT_CONTAINER]
    ]
    told = with_driver | {t.node for t in toolkits}
    all_validators = await _failing_pods(gateway, namespace, VALIDATOR_SELECTOR, "validator", gpu, only)
    waiting = {v.node: v for v in all_validators if v.node in told}
    for pod in drivers + toolkits:  # its validator waits for it: this pod is the story, the validator's state a note
        validator = waiting.get(pod.node)
        if validator is not None:
            where = f" in {validator.containers[0][0]}" if validator.containers else ""
            pod.validator = f"{validator.name}: {validator.state}{where}"
            pod.status_lines.append(Evidence("status", f"validator {validator.name}", f"{validator.state}{where}"))
    validators = [v for v in all_validators if v.node not in told]
    groups: dict[tuple[str, ...], list[FailingPod]] = {}
    for pod in sorted(drivers + toolkits + validators, key=lambda p: p.node):
        groups.setdefault(pod.group, []).append(pod)
    semaphore = asyncio.Semaphore(CONCURRENCY)

    async def explain(pod: FailingPod, size: int) -> Check:
        async with semaphore:
            node = gpu.get(pod.node)
            evidence = await _evidence(gateway, namespace, pod, node)
        context = {"node": pod.node, "kernel": node.kernel if node is not None else ""}
        return finding_check(pod, match(evidence, context), evidence, size, namespace)

    matched = 0
    for members in groups.values():
        reps = members[: max(1, representatives)]
        for check in await asyncio.gather(*(explain(p, len(members)) for p in reps)):
            matched += bool(check.data.get("matched"))
            yield check
        if len(members) > len(reps):
            yield group_check(members, len(reps))
    failing = len(drivers) + len(toolkits) + len(validators)
    if not failing:
        yield Check("diagnosis-summary", Status.PASS, "no failing driver, toolkit or validator pod on the GPU nodes")
        return
    read = sum(min(len(m), max(1, representatives)) for m in groups.values())
    yield Check(
        "diagnosis-summary",
        Status.FAIL,
        f"{failing} failing GPU nodes in {len(groups)} groups; {read} pods read, {matched} explained by a known failure",
        data={"failing": failing, "groups": len(groups), "read": read, "matched": matched},
    )


async def diagnose_cluster(session: Session, plan: Plan, nodes: Iterable[str] | None) -> AsyncGenerator[Check, None]:
    """:func:`diagnose` of the cluster's GPU nodes in the plan's operator namespace (``nodes``: only these)."""
    namespace = await session.namespace(plan)
    gpu = {n.name: n for n in (await session.discover()).gpu_nodes}
    checks = diagnose(session.gateway, namespace, gpu, only=set(nodes) if nodes is not None else None)
    async with contextlib.aclosing(checks):
        async for check in checks:
            yield check
