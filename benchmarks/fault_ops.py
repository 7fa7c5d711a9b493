"""The operations of the fault matrix, each run through the engine facade exactly as the CLI and the TUI run it.

Every ``op_<name>(lab, trial)`` first runs the operation without faults (the baseline: what a correct
answer looks like), then arms the cell's fault with :meth:`Trial.arm` and runs it again. It returns a
short description of the correct result (the cell *survived*), raises :class:`Reported` or an engine
error when the failure was reported clearly, and raises :class:`WrongResult` when the answer differs
from the baseline without a word (counted as a crash). Apply and dry-run cells also record the
cluster's state afterwards in ``trial.state``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from benchmarks.faultmatrix import REQUEST_TIMEOUT, SLOW_MS, Lab, Reported, Trial, clear_message
from tests.helpers.demo_thread import DemoClusterThread
from wizard.cluster.applying.apply import contains
from wizard.cluster.applying.backup import ObjectRef, clean
from wizard.cluster.facade import Cluster
from wizard.cluster.gateway.writes import MERGE_PATCH
from wizard.engine.plan import Plan
from wizard.engine.render import render
from wizard.engine.results import Check, Status
from wizard.registry.client import Credentials, RegistryClient


class WrongResult(Exception):
    """The operation finished without an error but its answer is not the correct one."""


@contextlib.asynccontextmanager
async def connect(demo: DemoClusterThread) -> AsyncIterator[Cluster]:
    """A Cluster on the demo cluster's kubeconfig, every request bounded by the matrix timeout."""
    cluster = await Cluster.connect(kubeconfig=str(demo.kubeconfig_path), timeout=REQUEST_TIMEOUT)
    try:
        yield cluster
    finally:
        await cluster.close()


def retries_of(*clients: Any) -> int:
    """Retries counted by the gateway and registry clients (``stats.retries``)."""
    return sum(int(getattr(getattr(c, "stats", None), "retries", 0) or 0) for c in clients)


async def until(predicate: Callable[[], bool], timeout: float) -> None:
    """Wait (polling) until ``predicate()`` holds or ``timeout`` passes."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate() and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)


def dead_endpoint() -> str:
    """``127.0.0.1:PORT`` where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


# -- reads --------------------------------------------------------------------------------------------


async def op_discover(lab: Lab, trial: Trial) -> str:
    async with connect(trial.demo) as cluster:
        trial.measure(only=["/api/v1/nodes"])
        # a plain list: the session's first discover is the list the faults must hit (later ones read its watch)
        listed = await cluster.gateway.list_page("nodes")
        baseline = sorted(str(n["metadata"]["name"]) for n in listed.get("items") or [])
        before = retries_of(cluster.gateway)
        trial.arm(only=["/api/v1/nodes"])
        try:
            names = sorted(n.name for n in (await cluster.discover()).nodes)
        finally:
            trial.retries = retries_of(cluster.gateway) - before
    if names != baseline:
        raise WrongResult(f"discovered {len(names)} nodes, not {len(baseline)}")
    return f"all {len(names)} nodes listed"


async def op_watch(lab: Lab, trial: Trial) -> str:
    demo = trial.demo
    value = uuid.uuid4().hex[:8]
    async with connect(demo) as cluster:
        node = (await cluster.discover()).nodes[0].name
        gateway = cluster.gateway

        async def follow() -> str:
            async for kind, facts in cluster.watch_nodes():
                if facts.name == node and facts.labels.get("fault-matrix") == value:
                    return kind
            raise WrongResult("the watch ended")

        trial.arm(only=["/api/v1/nodes"], methods=["GET"])  # the label PATCH below is not faulted
        task = asyncio.create_task(follow())
        try:
            await until(lambda: demo.faults.total >= (trial.cell.budget or 2) or task.done(), 3.0)
            patch = gateway.raw(gateway.core, "patch_node")
            # The change the watch must see, not the operation under test: an idempotent merge patch that
            # may take longer than the matrix's request limit on busy cores (it did, once in 60 under load).
            label = {"metadata": {"labels": {"fault-matrix": value}}}
            await gateway.call("label", patch, node, label, timeout=10.0, _content_type=MERGE_PATCH)
            kind = await asyncio.wait_for(task, 20)
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            # Every node GET after the first (re-watch, re-list) was caused by a fault: count them as retries.
            requests = demo.faults.matched
            trial.retries = max(requests - 1, 0)
    return f"label change seen ({kind}) after {requests} node request(s)"


async def op_preflight(lab: Lab, trial: Trial) -> str:
    async with connect(trial.demo) as cluster:
        plan = await cluster.live_plan()
        trial.measure()
        baseline = await cluster.preflight(plan)
        before = retries_of(cluster.gateway)
        trial.arm()
        try:
            found = await cluster.preflight(plan)
        finally:
            trial.retries = retries_of(cluster.gateway) - before
    if not found.ok:
        raise Reported("; ".join(c.line() for c in found.checks if not c.ok))
    if [(c.check, c.status) for c in found.checks] != [(c.check, c.status) for c in baseline.checks]:
        raise WrongResult("preflight passed with other checks than without faults")
    return f"{len(found.checks)} checks as without faults"


async def op_verify(lab: Lab, trial: Trial) -> str:
    demo = trial.demo
    async with connect(demo) as cluster:
        plan = await cluster.live_plan()
        gpu = sorted(n.name for n in (await cluster.discover()).gpu_nodes)
        trial.measure()
        async with RegistryClient(timeout=REQUEST_TIMEOUT, **demo.registry_options()) as registry:
            baseline = await _verify(cluster, plan, registry)
        before = retries_of(cluster.gateway)
        options, creds = _registry_for(lab, demo, trial)
        async with RegistryClient(timeout=REQUEST_TIMEOUT, credentials=creds, **options) as registry:
            trial.arm(exec_nodes=gpu[:1])
            try:
                checks = await _verify(cluster, plan, registry)
            finally:
                trial.retries = retries_of(cluster.gateway, registry) - before
                trial.injected_outside = _outside(trial, registry)
    known = {(c.check, c.node): c.status for c in baseline}
    flagged = (Status.FAIL, Status.WARN, Status.SKIP)  # a check that could not run is reported, not passed
    problems = [c for c in checks if c.status in flagged and known.get((c.check, c.node)) != c.status]
    if problems:
        unclear = [c.line() for c in problems if not clear_message(c.line())]
        if unclear:
            raise WrongResult(f"unclear check: {unclear[0]}")
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        raise Reported(problems[0].line() + more)
    if {(c.check, c.node): c.status for c in checks} != known:
        raise WrongResult("verification passed with other checks than without faults")
    return checks[-1].line()


async def _verify(cluster: Cluster, plan: Plan, registry: RegistryClient) -> list[Check]:
    stream = cluster.verify(plan, registry=registry, timeout=10.0)
    async with contextlib.aclosing(stream):
        return [item async for item in stream if isinstance(item, Check)]


def _registry_for(lab: Lab, demo: DemoClusterThread, trial: Trial) -> tuple[dict[str, Any], dict[str, Credentials]]:
    """Registry options for the cell: the demo's registry, a dead port, or the htpasswd registry with a wrong password."""
    options = demo.registry_options()
    fault = trial.cell.fault
    if fault == "registry-down":
        return {"mirrors": dict.fromkeys(options["mirrors"], dead_endpoint())}, {}
    if fault == "registry-401":
        host = lab.auth_registry.host
        mirrors = dict.fromkeys(options["mirrors"], host)
        return {"mirrors": mirrors, "insecure_registries": [host]}, {
            host: Credentials(lab.auth_registry.username, "wrong")
        }
    return options, {}


def _outside(trial: Trial, registry: RegistryClient) -> int:
    """Faults met outside the demo server: each refused registry request."""
    return registry.stats.requests if trial.cell.fault in ("registry-down", "registry-401") else 0


async def op_registry(lab: Lab, trial: Trial) -> str:
    demo = trial.demo
    options, creds = _registry_for(lab, demo, trial)
    async with connect(demo) as cluster:
        refs = sorted({e.image for e in render(await cluster.live_plan(), await cluster.discover()).node_images})
    good_options, good_creds = demo.registry_options(), {}
    if trial.cell.fault == "registry-401":
        refs = [lab.auth_image]
        good_options = {"insecure_registries": [lab.auth_registry.host]}
        good_creds = {lab.auth_registry.host: Credentials(lab.auth_registry.username, lab.auth_registry.password)}
        options = {"insecure_registries": [lab.auth_registry.host]}
    trial.measure(only=["/v2"])
    async with RegistryClient(timeout=REQUEST_TIMEOUT, credentials=good_creds, **good_options) as registry:
        baseline = await registry.check_many(refs)
    if not all(s.exists for s in baseline.values()):
        raise WrongResult(f"baseline: {[s.error or 'missing' for s in baseline.values()]}")
    async with RegistryClient(timeout=REQUEST_TIMEOUT, credentials=creds, **options) as registry:
        trial.arm(only=["/v2"])
        try:
            found = await registry.check_many(refs)
        finally:
            trial.retries = retries_of(registry)
            trial.injected_outside = _outside(trial, registry)
    errors = [s.error for s in found.values() if s.error]
    if errors:
        raise Reported(errors[0])
    if {r: s.digest for r, s in found.items()} != {r: s.digest for r, s in baseline.items()}:
        raise WrongResult("other digests than without faults")
    return f"{len(found)} image(s) present with the same digest"


# -- changes ------------------------------------------------------------------------------------------


def snapshot(demo: DemoClusterThread, keys: list[ObjectRef]) -> dict[str, dict[str, Any] | None]:
    """The objects as stored now (server-managed fields removed), None for those absent."""
    plural = {"ClusterPolicy": "clusterpolicies", "NVIDIADriver": "nvidiadrivers"}
    found: dict[str, dict[str, Any] | None] = {}
    for ref in keys:
        obj = demo.store.get(plural[ref.kind], ref.name)
        found[ref.key] = clean(obj) if obj else None
    return found


def judge(before: dict[str, Any], after: dict[str, Any], bodies: list[dict[str, Any]]) -> str:
    """``unchanged``, ``applied`` (every body holds) or ``HALF``."""
    if after == before:
        return "unchanged"
    if all(contains(after.get(ObjectRef.of(body).key), body) for body in bodies):
        return "applied"
    return "HALF"


async def op_prepare(lab: Lab, trial: Trial) -> str:
    demo = trial.demo
    async with connect(demo) as cluster:
        live = await cluster.live_plan()
        plan = live.model_copy(update={"driver": live.driver.model_copy(update={"version": "580.126.20"})})
        rendered = render(plan, await cluster.discover())
        trial.measure(only=["/apis/nvidia.com"])
        baseline = await cluster.prepare_apply(rendered)
        refs = [ObjectRef.of(o) for o in baseline.objects]
        before = snapshot(demo, refs)
        retried = retries_of(cluster.gateway)
        trial.arm(only=["/apis/nvidia.com"])
        try:
            prepared = await cluster.prepare_apply(rendered)
        finally:
            trial.retries = retries_of(cluster.gateway) - retried
            trial.state = "unchanged" if snapshot(demo, refs) == before else "CHANGED"
    if prepared.errors:
        raise Reported("; ".join(prepared.errors))
    if prepared.diff != baseline.diff:
        raise WrongResult("a different diff than without faults")
    return "server dry-run accepted, same diff as without faults"


async def op_apply(lab: Lab, trial: Trial) -> str:
    demo = lab.fresh("sle-micro-precompiled")
    trial.demo = demo
    plan = Plan.model_validate(
        {
            "mode": "precompiled",
            "driver": {
                "version": "580.126.09.1",
                "repository": "registry.example.com/mlops",
                "useNvidiaDriverCRD": True,
            },
        }
    )
    async with connect(demo) as cluster:
        prepared = await cluster.prepare_apply(render(plan, await cluster.discover()))
        if not prepared.ok or len(prepared.objects) != 2:
            raise WrongResult(f"the apply could not be prepared: {prepared.errors}")
        refs = [ObjectRef.of(o) for o in prepared.objects]
        before = snapshot(demo, refs)
        retried = retries_of(cluster.gateway)
        trial.arm(only=["/apis/nvidia.com/v1alpha1/nvidiadrivers"], methods=["PATCH"])
        trial.baseline_requests = 1  # without faults: one server-side-apply PATCH of the NVIDIADriver
        try:
            result = await cluster.apply(prepared, backup_dir=lab.workdir / trial.cell.id)
        finally:
            trial.retries = retries_of(cluster.gateway) - retried
            if trial.cell.fault == "slow":
                await asyncio.sleep(SLOW_MS / 1000)  # a request the client gave up on must not land later
            trial.state = judge(before, snapshot(demo, refs), prepared.objects)
    if trial.state != result.state:
        raise WrongResult(f"the wizard says {result.state}, the cluster is {trial.state}")
    if not result.ok:
        raise Reported(result.message)
    return result.message
