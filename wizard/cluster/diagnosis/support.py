"""What a support bundle holds, read from the cluster: the files a support engineer asks for first.

:func:`collect` streams :class:`BundleFile` entries (and progress lines) for ``gpu-wizard
support-bundle``: the operator's ClusterPolicies and NVIDIADrivers, the operator namespace's
DaemonSets, a summary of every pod there and the full objects of the sampled driver pods, their
containers' logs (current and previous), the namespace's events, the labels of every GPU node,
``nvidia-smi -q`` per sampled GPU node (run in its driver container; SKIPPED with the reason in
pre-installed mode or when the container does not run), the diagnosis of the failing nodes, and
gpu-wizard's version and plan.

Never a credential: no Secret is ever read (pull secrets are named by the plan, nothing more), env
values whose name looks like a credential are replaced by ``<redacted>`` wherever they appear,
``last-applied-configuration`` annotations and ``managedFields`` are dropped, and the kubeconfig is
not read here at all. Bounded at 5,000 nodes: logs and ``nvidia-smi -q`` for at most
:data:`SAMPLED_PODS` driver pods (failing ones first), events capped at :data:`MAX_EVENTS`,
:data:`LOG_LINES` lines per log; ``MANIFEST.txt`` says what was sampled and what was left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncGenerator, Awaitable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wizard.cluster.core.preflight import DRIVERS, POLICY
from wizard.cluster.diagnosis.diagnose import diagnose, failing_pod
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.engine.facts import NodeFacts
from wizard.engine.operator_names import DRIVER_CONTAINER, DRIVER_SELECTOR

if TYPE_CHECKING:
    from wizard.cluster.core.session import Session
    from wizard.engine.plan import Plan

SAMPLED_PODS = 20
"""Driver pods whose logs and ``nvidia-smi -q`` go into the bundle (failing first, then by node name)."""
LOG_LINES = 2000
MAX_EVENTS = 1000
SMI_TIMEOUT = 30.0
REDACTED = "<redacted>"
CREDENTIAL_NAME = re.compile(r"pass|secret|token|key|credential|auth|cert|private|session|cookie", re.IGNORECASE)
"""Env names whose values are never written (``REGISTRY_PASSWORD``, ``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``…)."""
DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)


@dataclass(frozen=True)
class BundleFile:
    """One file of the bundle: its path inside the archive and its bytes."""

    path: str
    data: bytes


def scrubbed(value: Any) -> Any:
    """A deep copy of an object with credential-looking env values redacted and noisy metadata dropped."""
    if isinstance(value, list):
        return [scrubbed(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "managedFields":
            continue
        if key == "annotations" and isinstance(item, dict):
            out[key] = {k: v for k, v in item.items() if k not in DROPPED_ANNOTATIONS}
            continue
        out[key] = scrubbed(item)
    name = value.get("name")
    if isinstance(name, str) and "value" in value and CREDENTIAL_NAME.search(name):
        out["value"] = REDACTED
    return out


def _json(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True, default=str) + "\n").encode()


def pod_summary(pod: Mapping[str, Any]) -> dict[str, Any]:
    """One entry of the namespace's pod list, as ``kubectl get pods -o wide`` says it; the container
    states in full only for a pod that is not ready (25,000 ready pods at 5,000 nodes stay small)."""
    status = pod.get("status") or {}
    containers = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    mains = status.get("containerStatuses") or []
    summary: dict[str, Any] = {
        "name": (pod.get("metadata") or {}).get("name"),
        "node": (pod.get("spec") or {}).get("nodeName"),
        "phase": status.get("phase"),
        "ready": f"{sum(1 for cs in mains if cs.get('ready'))}/{len(mains)}",
        "restarts": sum(int(cs.get("restartCount") or 0) for cs in containers),
    }
    if failing_pod(pod, "pod") is not None:
        summary["containers"] = [
            {
                "name": cs.get("name"),
                "image": cs.get("image"),
                "ready": cs.get("ready"),
                "restarts": cs.get("restartCount"),
                "state": cs.get("state"),
                "lastState": cs.get("lastState"),
            }
            for cs in containers
        ]
    return summary


async def collect(
    gateway: Gateway,
    namespace: str,
    gpu: list[NodeFacts],
    *,
    driver_enabled: bool,
    about: Mapping[str, bytes],
    sampled: int = SAMPLED_PODS,
) -> AsyncGenerator[BundleFile | str, None]:
    """The bundle's files (``about``: gpu-wizard's own files, e.g. version and plan), with progress lines between."""
    notes: list[str] = []
    for path, data in about.items():
        yield BundleFile(path, data)
    yield "reading the operator's custom resources and DaemonSets"
    yield await _section("cluster/version.json", gateway.version())
    yield await _section("operator/clusterpolicies.json", gateway.list_custom(*POLICY))
    yield await _section("operator/nvidiadrivers.json", gateway.list_custom(*DRIVERS))
    yield await _section("operator/daemonsets.json", gateway.list_daemonsets(namespace))
    yield f"reading the pods of {namespace}"
    summaries: list[dict[str, Any]] = []
    drivers: list[dict[str, Any]] = []
    label, _, component = DRIVER_SELECTOR.partition("=")
    try:
        async with contextlib.aclosing(gateway.pod_pages(namespace)) as pages:
            async for page, _ in pages:
                for pod in page:
                    summaries.append(pod_summary(pod))
                    if ((pod.get("metadata") or {}).get("labels") or {}).get(label) == component:
                        drivers.append(pod)
        yield BundleFile("operator/pods-summary.json", _json(summaries))
    except ClusterError as exc:
        yield BundleFile("operator/pods-summary.SKIPPED.txt", f"SKIPPED: {exc.message}\n".encode())
    drivers.sort(key=lambda p: (failing_pod(p, "driver") is None, str((p.get("spec") or {}).get("nodeName") or "")))
    chosen = drivers[: max(0, sampled)]
    if len(drivers) > len(chosen):
        notes.append(
            f"logs and nvidia-smi -q of {len(chosen)} of {len(drivers)} driver pods (failing ones first); "
            "the others are in operator/pods-summary.json"
        )
    yield BundleFile("operator/driver-pods.json", _json(scrubbed(chosen)))
    events = await _section("operator/events.json", gateway.list_events(namespace, limit=MAX_EVENTS))
    if events.data.count(b'"involvedObject"') >= MAX_EVENTS:
        notes.append(f"the first {MAX_EVENTS} events of {namespace} only")
    yield events
    # one line per node (greppable, and 5,000 nodes' labels stay a few MB)
    lines = (json.dumps({"node": n.name, "labels": dict(n.labels)}, sort_keys=True) + "\n" for n in gpu)
    yield BundleFile("nodes/gpu-node-labels.jsonl", "".join(lines).encode())
    yield f"reading the logs of {len(chosen)} driver pods"
    for index, pod in enumerate(chosen, 1):
        async for file in _pod_logs(gateway, namespace, pod):
            yield file
        if index % 5 == 0:
            yield f"logs: {index} of {len(chosen)} driver pods"
    yield "running nvidia-smi -q in the driver containers"
    async for file in _smi(gateway, namespace, gpu, chosen, driver_enabled=driver_enabled):
        yield file
    yield "diagnosing the failing GPU nodes"
    try:
        diagnosis = [c.as_dict() async for c in diagnose(gateway, namespace, {n.name: n for n in gpu})]
        yield BundleFile("diagnosis.json", _json(diagnosis))
    except ClusterError as exc:
        yield BundleFile("diagnosis.SKIPPED.txt", f"SKIPPED: {exc.message}\n".encode())
    yield BundleFile("NOTES.txt", ("\n".join(notes) + "\n" if notes else "nothing was sampled or left out\n").encode())


async def collect_cluster(
    session: Session, plan: Plan | None, *, about: Mapping[str, bytes]
) -> AsyncGenerator[BundleFile | str, None]:
    """:func:`collect` for the cluster's GPU nodes in the plan's operator namespace (see ``Cluster.support_files``)."""
    namespace = await session.namespace(plan)
    gpu = sorted((await session.discover()).gpu_nodes, key=lambda n: n.name)
    files = collect(session.gateway, namespace, gpu, driver_enabled=plan.driver_enabled if plan else True, about=about)
    async with contextlib.aclosing(files):
        async for item in files:
            yield item


async def _section(path: str, read: Awaitable[Any]) -> BundleFile:
    """One file of the bundle from one read; a read the cluster refuses (RBAC, an old server) becomes a
    ``.SKIPPED.txt`` file with the reason, so the rest of the bundle is still written."""
    try:
        return BundleFile(path, _json(scrubbed(await read)))
    except ClusterError as exc:
        return BundleFile(path.removesuffix(".json") + ".SKIPPED.txt", f"SKIPPED: {exc.message}\n".encode())


async def _pod_logs(gateway: Gateway, namespace: str, pod: Mapping[str, Any]) -> AsyncGenerator[BundleFile, None]:
    name = str(pod["metadata"]["name"])
    status = pod.get("status") or {}
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        container = str(cs.get("name") or "")
        runs = [False, True] if cs.get("restartCount") else [False]
        for previous in runs:
            path = f"logs/{name}/{container}{'.previous' if previous else ''}.log"
            try:
                text = await gateway.read_log(namespace, name, container, tail_lines=LOG_LINES, previous=previous)
            except ClusterError as exc:
                text = f"SKIPPED: {exc.message}\n"
            yield BundleFile(path, text.encode())


async def _smi(
    gateway: Gateway, namespace: str, gpu: list[NodeFacts], chosen: list[dict[str, Any]], *, driver_enabled: bool
) -> AsyncGenerator[BundleFile, None]:
    if not driver_enabled:
        reason = (
            "SKIPPED: pre-installed mode: the driver runs on the host, not in a driver container; "
            "`gpu-wizard verify` runs the host's nvidia-smi through a probe pod\n"
        )
        yield BundleFile("nvidia-smi/SKIPPED.txt", reason.encode())
        return
    by_node = {str((p.get("spec") or {}).get("nodeName") or ""): p for p in chosen}

    async def one(node: NodeFacts) -> BundleFile:
        pod = by_node[node.name]
        name = str(pod["metadata"]["name"])
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        running = any(cs.get("name") == DRIVER_CONTAINER and "running" in (cs.get("state") or {}) for cs in statuses)
        if not running:
            text = f"SKIPPED: {DRIVER_CONTAINER} is not running in {name}\n"
        else:
            try:
                result = await gateway.exec(
                    namespace, name, DRIVER_CONTAINER, ["nvidia-smi", "-q"], timeout=SMI_TIMEOUT
                )
                text = result.stdout + (f"\n(stderr)\n{result.stderr}" if result.stderr else "")
                if result.exit_code:
                    text += f"\n(exit status {result.exit_code})\n"
            except ClusterError as exc:
                text = f"SKIPPED: nvidia-smi -q could not run in {name}: {exc.message}\n"
        return BundleFile(f"nvidia-smi/{node.name}.txt", text.encode())

    targets = [n for n in sorted(gpu, key=lambda n: n.name) if n.name in by_node]
    for file in await asyncio.gather(*(one(n) for n in targets)):
        yield file
    missing = sorted(n.name for n in gpu if n.name not in by_node)
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        yield BundleFile(
            "nvidia-smi/SKIPPED.txt",
            f"SKIPPED: no sampled driver pod on these GPU nodes: {shown}\n".encode(),
        )
