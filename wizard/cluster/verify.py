"""Prove the driver works on every GPU node: streamed checks of each driver pod and host.

The stream yields :class:`~wizard.engine.results.Check` and :class:`~wizard.engine.results.LogLine` items as they
happen. Nodes are verified concurrently (an ``asyncio.Semaphore`` bounds how many at once), each
with its own timeouts, so a slow or failing node never holds up the others. Per GPU node:

* driver modes: the driver pod (``app.kubernetes.io/component=nvidia-driver``, containers by name),
  its ``nvidia-driver-ctr`` spec image against the rendered image for that node, the running
  ``imageID`` digest against the registry's digest of that tag (a tag re-pushed after the pull shows
  up here), and ``nvidia-smi`` run in the container, its output streamed and parsed;
* pre-installed mode: the ``nvidia.com/gpu.deploy.driver=pre-installed`` label and ``nvidia-smi`` on
  the host through the host probe;
* every mode: the toolkit binary's mount (``noexec`` flagged), ``/run/nvidia/driver`` for the
  containerized driver, and the containerd drop-in's ``BinaryName`` against the live installDir.

A node's commands run as scripts (:mod:`wizard.engine.nodescript`): ``nvidia-smi`` as an exec in the
driver container; the host checks (the same steps on every node) through ONE host probe run for
all the nodes (:func:`wizard.cluster.hostprobe.run_on_hosts`: one DaemonSet), started with the
verification, each node's host results reported as soon as both they and the node's own checks are
in. The operator's ``nvidia-driver-ctr`` has no host root, so the host checks always take the probe
path, the same on the demo as on a real cluster. Cancelling the consumer cancels every node task
and the probe run, which removes what it created on the way out.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway
from wizard.cluster.hostprobe import HostRun, host_findmnt, run_on_hosts, truncation_check
from wizard.cluster.operator_status import DEFAULT_DROP_IN, live_paths, policy_checks
from wizard.cluster.probe import Leftover, Shell
from wizard.cluster.rollout import DRIVER_CONTAINER, DRIVER_SELECTOR
from wizard.cluster.slices import Slices, gc_paused
from wizard.engine import nvsmi
from wizard.engine.facts import NodeFacts
from wizard.engine.nodescript import Step, StepResult, drop_in_finding, mount_finding
from wizard.engine.plan import Plan
from wizard.engine.results import Check, LogLine, Status
from wizard.registry.client import TagStatus

__all__ = [
    "DEFAULT_DROP_IN",
    "DriverPod",
    "VerifyContext",
    "driver_pod_pages",
    "live_paths",
    "policy_checks",
    "verify_nodes",
]

Item = Check | LogLine
log = logging.getLogger(__name__)
Emit = Callable[[Item], None]


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
        return cls(
            name=str(pod["metadata"]["name"]),
            node=str((pod.get("spec") or {}).get("nodeName") or ""),
            image=str(spec.get("image") or ""),
            image_id=str(status.get("imageID") or ""),
            state=state,
            why=why,
        )


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


def _digest_of(image_id: str) -> str:
    return image_id.rsplit("@", 1)[-1] if "sha256:" in image_id else ""


class NodeRun:
    """The checks of one GPU node; findings go to ``emit`` as they are made."""

    def __init__(self, ctx: VerifyContext, node: NodeFacts, emit: Emit) -> None:
        self.ctx = ctx
        self.node = node
        self._emit = emit
        self.wants_host = False
        """The node's own checks got far enough for its host checks to count."""

    def emit(self, check: str, status: Status, message: str, **extra: Any) -> None:
        finding = Check(check, status, message, node=self.node.name, **extra)
        if status is Status.FAIL:
            self.ctx.failed.add(self.node.name)
        elif status is Status.SKIP:
            self.ctx.skipped.append(finding)
        else:
            self.ctx.passed += 1
        self._emit(finding)

    def line(self, stream: str, text: str) -> None:
        self._emit(LogLine(text, self.node.name, stream))

    async def run_steps(self, shell: Shell, steps: list[Step]) -> None:
        """Run ``steps`` in one exec and report each; an exec that fails fails every one of its checks."""
        try:
            results = await shell.run_steps(steps, self.line)
        except ClusterError as exc:
            for step in steps:
                self.emit(
                    step.check,
                    Status.FAIL,
                    f"cannot run {step.argv[0]} in {shell.pod}: {exc.message}",
                    hint=exc.hint or "check that the node's kubelet is reachable",
                )
            return
        for step, result in zip(steps, results, strict=True):
            self.report(step, result)

    def report(self, step: Step, result: StepResult) -> None:
        if step.check in ("nvidia-smi", "host-nvidia-smi"):
            if self.smi_check(step.check, result).ok and step.check == "host-nvidia-smi":
                self.ctx.host_ok.add(self.node.name)
            return
        if step.check == "containerd-config":
            status, message, hint = drop_in_finding(result, self.ctx.drop_in, self.ctx.toolkit_dir)
        else:
            path, what = (
                step.argv[-1],
                "toolkit.installDir" if step.check == "toolkit-path" else "the driver install directory",
            )
            status, message, hint = mount_finding(result, path, what, writable=step.check == "toolkit-path")
        self.emit(step.check, status, message, hint=hint, detail=result.output)

    async def run(self) -> None:
        if self.ctx.plan.driver_enabled:
            await self.driver_mode()
        else:
            await self.preinstalled_mode()

    async def host_checks(self) -> None:
        """Report this node's host probe results (waits for them: the probe runs for every node at once)."""
        steps = self.ctx.host_steps()
        run = await self.ctx.host_result(self.node.name)
        if not run.ran:
            for step in steps:
                self.emit(
                    step.check,
                    Status.FAIL,
                    f"cannot run {step.argv[0]} on the host: {run.error}",
                    hint=run.hint or "check that the node is Ready",
                )
            return
        for step, result in zip(steps, run.results, strict=True):
            if step.stream:
                for text in result.output.splitlines():
                    self.line("stdout", text)
            self.report(step, result)
        if run.truncated:
            found = truncation_check(self.node.name, run.truncated)
            self.emit(found.check, found.status, found.message, hint=found.hint, data=found.data)

    async def driver_mode(self) -> None:
        pod = self.ctx.pods.get(self.node.name)
        if pod is None:
            if self.node.preinstalled:
                self.emit(
                    "driver-pod",
                    Status.FAIL,
                    "no driver pod: the node is labelled nvidia.com/gpu.deploy.driver=pre-installed (a host driver was found)",
                    hint="use pre-installed mode, or remove the host driver",
                )
            else:
                label = self.node.deploy_driver or "unset"
                self.emit(
                    "driver-pod",
                    Status.FAIL,
                    f"no driver pod on the node (nvidia.com/gpu.deploy.driver={label})",
                    hint="check the driver DaemonSets and the node's deploy label",
                )
            return
        expected = self.ctx.expected.get(self.node.name, "")
        picked = next(
            (tag for tag, image in self.ctx.choices.get(self.node.name, {}).items() if image == pod.image), ""
        )
        own = self.ctx.own_tags.get(self.node.name, "")
        if pod.image == expected and (not picked or picked == own):
            self.emit("driver-image", Status.PASS, pod.image, data={"pod": pod.name})
        elif picked:  # the operator read its cluster-wide OS tag from another node than gpu-wizard predicted
            expected = pod.image  # what the operator chose is what is checked from here on
            why = (
                f"{pod.name} runs {pod.image}: the operator took the cluster-wide OS tag {picked} from the GPU node "
                "its informer listed first (operator issues #2471, #1200)"
            )
            if picked == own:
                self.emit("driver-image", Status.PASS, f"{why}; it is this node's own OS", data={"pod": pod.name})
            else:
                self.emit(
                    "driver-image",
                    Status.FAIL,
                    f"{why}, but this node runs {own}: a driver built for another OS does not load here",
                    hint="use NVIDIADriver CRs (driver.useNvidiaDriverCRD: true): one driver pool per OS",
                )
        else:
            self.emit(
                "driver-image",
                Status.FAIL,
                f"{pod.name} runs {pod.image or 'no nvidia-driver-ctr'}, expected {expected}",
                hint="the operator rendered another image than planned: check the ClusterPolicy's driver fields and the node's OS/kernel labels",
            )
        if pod.state != "running":
            self.emit(
                "driver-pod",
                Status.FAIL,
                f"{pod.name}: nvidia-driver-ctr {pod.why}",
                hint="see `kubectl describe pod` for the events",
            )
            return
        self.digest_check(expected or pod.image, pod.image_id)
        smi = Step("nvidia-smi", ("nvidia-smi",), stream=True)
        driver_shell = Shell(self.ctx.gateway, self.ctx.namespace, pod.name, DRIVER_CONTAINER, "", self.ctx.timeout)
        await self.run_steps(driver_shell, [smi])
        self.wants_host = True

    def digest_check(self, image: str, image_id: str) -> None:
        """The running ``imageID`` against the registry's digest of the tag; SKIPPED (never passed) when
        the registry was not asked or did not answer."""
        answer = self.ctx.digests.get(image)
        running = _digest_of(image_id)
        self.line("stdout", f"image:   {image}")
        self.line("stdout", f"imageID: {image_id or '(none)'}")
        if answer is None:
            reason = self.ctx.no_registry or f"the registry was not asked about {image}"
            self.emit(
                "image-digest",
                Status.SKIP,
                f"registry digest not checked: {reason}",
                hint="run verify with registry access to compare the running digest with the registry's",
                data={"running": running, "reason": reason},
            )
            return
        self.line("stdout", f"registry digest: {answer.digest or answer.error or 'missing'}")
        if answer.error:
            reason = f"cannot read the registry digest of {image}: {answer.error}"
            self.emit(
                "image-digest",
                Status.SKIP,
                reason,
                hint="check the registry credentials (--registry-auth-file) and that the registry is reachable",
                data={"running": running, "reason": reason},
            )
        elif not answer.exists:
            self.emit(
                "image-digest",
                Status.FAIL,
                f"{image} no longer exists in the registry (the pod runs {running or 'an unknown digest'})",
                hint="re-mirror the image; a restarted pod could not pull it",
            )
        elif running == answer.digest:
            self.emit("image-digest", Status.PASS, f"{running} matches the registry", data={"digest": running})
        else:
            self.emit(
                "image-digest",
                Status.FAIL,
                f"the pod runs {running or 'an unknown digest'}, the registry's {image} is now {answer.digest}",
                hint="the tag was re-pushed after the pod pulled it: delete the driver pod (OnDelete) so it pulls again, if the new image is intended",
                data={"running": running, "registry": answer.digest},
            )

    def smi_check(self, check: str, result: StepResult) -> nvsmi.SmiReport:
        report = nvsmi.parse_table(result.output, result.exit_code if result.exit_code is not None else 1)
        if not report.ok:
            self.emit(
                check,
                Status.FAIL,
                f"nvidia-smi failed: {report.error}",
                hint="see the output above; the driver is not usable on this node",
                detail=result.output,
            )
            return report
        data = {"driver_version": report.driver_version, "gpus": list(report.gpus), "header": report.header_style}
        wanted = self.ctx.plan.driver.version
        branch = wanted.split(".", 1)[0] if wanted and not wanted.startswith("sha256:") else ""
        if branch and report.driver_version.split(".", 1)[0] != branch:
            self.emit(
                check, Status.FAIL, f"{report.summary()}; the plan wants the {branch} branch ({wanted})", data=data
            )
        elif self.node.gpu_count and report.advertisable(self.node.mig_strategy) * self.node.gpu_replicas < (
            self.node.gpu_count
        ):
            # the advertised count is of devices: MIG devices (strategy single) and time-sliced replicas count too
            self.emit(
                check, Status.WARN, f"{report.summary()}; the node advertises {self.node.gpu_count} GPUs", data=data
            )
        else:
            self.emit(check, Status.PASS, report.summary(), data=data)
        return report

    async def preinstalled_mode(self) -> None:
        pod = self.ctx.pods.get(self.node.name)
        if pod is not None:
            self.emit(
                "driver-pod",
                Status.FAIL,
                f"driver pod {pod.name} runs on a node meant to use its host driver",
                hint="the ClusterPolicy must set driver.enabled: false",
            )
        if self.node.preinstalled:
            self.emit("deploy-label", Status.PASS, "nvidia.com/gpu.deploy.driver=pre-installed")
        else:
            self.emit(
                "deploy-label",
                Status.WARN,
                f"nvidia.com/gpu.deploy.driver={self.node.deploy_driver or 'unset'}, not pre-installed",
                hint="with driver.enabled=false the driver manager never relabels the node (operator issue #982); the host nvidia-smi check below is what counts",
            )
        self.wants_host = True


def summary(ctx: VerifyContext, total: int) -> Check:
    """The last line: failed nodes, else the passed checks and the SKIPPED ones with their reasons."""
    counts = {"passed": ctx.passed, "skipped": len(ctx.skipped), "nodes": total}
    if ctx.failed:
        shown = ", ".join(sorted(ctx.failed)[:10]) + ("…" if len(ctx.failed) > 10 else "")
        skipped = f" ({len(ctx.skipped)} checks SKIPPED)" if ctx.skipped else ""
        return Check(
            "summary", Status.FAIL, f"{len(ctx.failed)} of {total} GPU nodes failed: {shown}{skipped}", data=counts
        )
    if ctx.skipped:
        reasons = list(dict.fromkeys(f"{c.check}: {c.data.get('reason') or c.message}" for c in ctx.skipped))
        why = reasons[0] + (f"; and {len(reasons) - 1} other reasons" if len(reasons) > 1 else "")
        return Check(
            "summary",
            Status.SKIP,
            f"{total} GPU nodes: {ctx.passed} checks passed, {len(ctx.skipped)} SKIPPED ({why})",
            hint="a check that could not run is not a pass: fix its cause and verify again",
            data=counts,
        )
    return Check("summary", Status.PASS, f"all {total} GPU nodes verified", data=counts)


async def _probe_hosts(ctx: VerifyContext, nodes: Sequence[str], concurrency: int, emit: Emit) -> None:
    """One host probe run for every node; each result goes to the node's future as it arrives."""
    runs = run_on_hosts(
        ctx.gateway,
        nodes,
        ctx.host_steps(),
        namespace=ctx.namespace,
        image=ctx.probe_image,
        timeout=ctx.timeout,
        concurrency=concurrency,
    )
    try:
        async with contextlib.aclosing(runs):
            async for item in runs:
                if isinstance(item, Leftover):
                    ctx.leftovers[item.name] = item
                    emit(item.check())
                elif not ctx.host_result(item.node).done():
                    ctx.host_result(item.node).set_result(item)
    except ClusterError as exc:
        for node in nodes:
            if not ctx.host_result(node).done():
                ctx.host_result(node).set_result(HostRun(node, error=exc.message, hint=exc.hint))
    for node in nodes:
        if not ctx.host_result(node).done():
            ctx.host_result(node).set_result(HostRun(node, error="the host probe gave no result for this node"))


class Outbox:
    """Findings and log lines of every node task, in the order they were made, to the one consumer.

    A node's ``nvidia-smi`` output alone is ~50 log lines: items are appended to a deque and the
    consumer wakes once per batch (an ``asyncio.Queue`` costs a put, a get and a wake-up check per
    item). The consumer hands the loop back every few milliseconds while it drains a long batch.
    """

    def __init__(self) -> None:
        self.items: collections.deque[Item] = collections.deque()
        self.ready = asyncio.Event()
        self.closed = False
        self.slices = Slices()

    def put(self, item: Item) -> None:
        self.items.append(item)
        self.ready.set()

    def close(self) -> None:
        """No more items: the consumer ends once it has taken those already in."""
        self.closed = True
        self.ready.set()

    async def drain(self) -> AsyncGenerator[Item, None]:
        """Every item, as it comes, until :meth:`close`."""
        items = self.items
        while True:
            await self.ready.wait()
            self.ready.clear()
            while items:
                yield items.popleft()
                await self.slices.pause()
            if self.closed:
                return


async def verify_nodes(
    ctx: VerifyContext,
    nodes: list[NodeFacts],
    concurrency: int,
    pod_pages: AsyncGenerator[list[DriverPod], None] | None = None,
) -> AsyncGenerator[Item, None]:
    """Verify ``nodes`` concurrently, yielding findings as they arrive; cleans up on cancellation.

    With ``pod_pages`` the driver pods are read while the first nodes are already being checked: a
    node starts as soon as its pod is known, the nodes without one once every page is read. The
    host probe runs for every node from the start; a node's host checks are reported once its own
    checks are done (outside the concurrency bound: they only wait).
    """
    outbox = Outbox()
    semaphore = asyncio.Semaphore(max(1, concurrency))
    pending = {node.name: node for node in nodes}
    tasks: list[asyncio.Task[None]] = []

    async def one(node: NodeFacts) -> None:
        run = NodeRun(ctx, node, outbox.put)
        try:
            async with semaphore:
                await run.run()
            if run.wants_host:
                await run.host_checks()
        except ClusterError as exc:
            run.emit("node", Status.FAIL, exc.message, hint=exc.hint)
        except Exception as exc:  # a bug in one node's checks must not end the others
            run.emit("node", Status.FAIL, f"unexpected error: {exc.__class__.__name__}: {exc}")

    def start(name: str) -> None:
        node = pending.pop(name, None)
        if node is not None:
            tasks.append(asyncio.create_task(one(node)))

    async def feed() -> None:
        try:
            if pod_pages is not None:
                async with contextlib.aclosing(pod_pages):
                    async for page in pod_pages:
                        for pod in page:
                            if pod.node in pending:
                                ctx.pods[pod.node] = pod
                                start(pod.node)
            for name in list(pending):
                start(name)
        except ClusterError as exc:
            outbox.put(Check("driver-pod", Status.FAIL, f"cannot list the driver pods: {exc.message}", hint=exc.hint))
            for name in list(pending):
                ctx.failed.add(name)
                pending.pop(name)
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(prober, return_exceptions=True)
        outbox.close()

    prober = asyncio.create_task(_probe_hosts(ctx, [n.name for n in nodes], concurrency, outbox.put))
    feeder = asyncio.create_task(feed())
    try:
        async with contextlib.aclosing(outbox.drain()) as items:
            async for item in items:
                yield item
    finally:
        for task in (feeder, *tasks):
            task.cancel()
        prober.cancel()  # closes the probe run: it removes its DaemonSet (shielded) and logs what it could not
        if tasks:
            await asyncio.wait(tasks, timeout=ctx.timeout)
        await asyncio.wait([prober], timeout=ctx.timeout)


async def driver_pod_pages(gateway: Gateway, namespace: str) -> AsyncGenerator[list[DriverPod], None]:
    """The driver pods, summarised, one API page at a time (terminating pods left out).

    The pages are read with the garbage collector paused (:func:`~wizard.cluster.slices.gc_paused`): only the
    summaries outlive them."""
    with gc_paused():
        async with contextlib.aclosing(gateway.pod_pages(namespace, label_selector=DRIVER_SELECTOR)) as pages:
            async for page, _ in pages:
                yield [DriverPod.of(pod) for pod in page if not pod["metadata"].get("deletionTimestamp")]
