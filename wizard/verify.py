"""Prove the driver works: streamed checks of the operator's status, every GPU node's driver pod and host.

The stream yields :class:`~wizard.results.Check` and :class:`~wizard.results.LogLine` items as they
happen. Nodes are verified concurrently (an ``asyncio.Semaphore`` bounds how many at once), each
with its own timeouts, so a slow or failing node never holds up the others. Per GPU node:

* driver modes: the driver pod (``app.kubernetes.io/component=nvidia-driver``, containers by name),
  its ``nvidia-driver-ctr`` spec image against the rendered image for that node, the running
  ``imageID`` digest against the registry's digest of that tag (a tag re-pushed after the pull shows
  up here), and ``nvidia-smi`` run in the container, its output streamed and parsed;
* pre-installed mode: the ``nvidia.com/gpu.deploy.driver=pre-installed`` label and ``nvidia-smi`` on
  the host through a short-lived probe pod;
* every mode: the toolkit binary's mount (``noexec`` flagged), ``/run/nvidia/driver`` for the
  containerized driver, and the containerd drop-in's ``BinaryName`` against the live installDir.

Cancelling the consumer cancels every node task; probe pods are deleted on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wizard import nvsmi
from wizard.errors import ClusterError
from wizard.facts import NodeFacts
from wizard.gateway import Gateway
from wizard.plan import DEFAULT_DRIVER_INSTALL_DIR, DEFAULT_TOOLKIT_INSTALL_DIR, Plan
from wizard.probe import HostShell, ProbePod, host_root_mount, sweep
from wizard.registry import TagStatus
from wizard.results import Check, LogLine, Status
from wizard.rollout import DRIVER_CONTAINER, DRIVER_SELECTOR, FALSE_READY_REASONS, ready_condition

Item = Check | LogLine
Emit = Callable[[Item], None]
DEFAULT_DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
_PREINSTALLED = "pre-installed"


@dataclass
class VerifyContext:
    """What every node's checks share."""

    gateway: Gateway
    plan: Plan
    namespace: str
    expected: dict[str, str]
    """Node -> the driver image the node should run (rendered)."""
    pods: dict[str, dict[str, Any]]
    """Node -> its driver pod."""
    digests: dict[str, TagStatus]
    """Image -> the registry's answer (empty without a registry client)."""
    toolkit_dir: str
    driver_dir: str
    drop_in: str
    probe_image: str
    timeout: float
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    failed: set[str] = field(default_factory=set)
    host_ok: set[str] = field(default_factory=set)
    """Nodes whose host ``nvidia-smi`` passed (pre-installed mode)."""


def live_paths(policy: Mapping[str, Any] | None) -> tuple[str, str, str]:
    """(toolkit installDir, driverInstallDir, containerd drop-in) as the live ClusterPolicy sets them."""
    spec = (policy or {}).get("spec") or {}
    toolkit = spec.get("toolkit") or {}
    env = {e.get("name"): str(e.get("value") or "") for e in toolkit.get("env") or [] if isinstance(e, Mapping)}
    drop_in = env.get("RUNTIME_DROP_IN_CONFIG") or DEFAULT_DROP_IN
    return (
        str(toolkit.get("installDir") or DEFAULT_TOOLKIT_INSTALL_DIR),
        str((spec.get("hostPaths") or {}).get("driverInstallDir") or DEFAULT_DRIVER_INSTALL_DIR),
        drop_in if drop_in.startswith("/") else DEFAULT_DROP_IN,
    )


def policy_checks(plan: Plan, policy: Mapping[str, Any] | None, drivers: list[dict[str, Any]]) -> list[Check]:
    """ClusterPolicy (and NVIDIADriver) state and conditions; NoGPUNodes / NFDLabelsMissing are not success."""
    if policy is None:
        return [
            Check(
                "cluster-policy",
                Status.FAIL,
                "no ClusterPolicy in the cluster",
                hint="apply the plan first: gpu-wizard apply --answers FILE",
            )
        ]
    name = policy["metadata"]["name"]
    status = policy.get("status") or {}
    state = str(status.get("state") or "unknown")
    cond = ready_condition(dict(policy))
    reason, text = str(cond.get("reason") or ""), str(cond.get("message") or "")
    checks: list[Check]
    if state == "ready" and reason in FALSE_READY_REASONS:
        checks = [
            Check(
                "cluster-policy",
                Status.FAIL,
                f"{name} reports ready but {reason}: {text}".rstrip(": "),
                hint="the operator sees no usable GPU node: check NFD and the nvidia.com/gpu.present labels",
            )
        ]
    elif state == "ready":
        checks = [Check("cluster-policy", Status.PASS, f"{name} ready ({reason or 'Ready'})")]
    else:
        errors = [c for c in status.get("conditions") or [] if c.get("type") == "Error" and c.get("status") == "True"]
        detail = (errors[0].get("message") if errors else text) or "no condition message"
        checks = [
            Check(
                "cluster-policy",
                Status.FAIL,
                f"{name} is {state}: {detail}",
                hint="gpu-wizard apply follows the rollout; see the driver pods' events",
            )
        ]
    if plan.driver_enabled and plan.driver.useNvidiaDriverCRD:
        if not drivers:
            checks.append(
                Check(
                    "nvidia-driver", Status.FAIL, "no NVIDIADriver object in the cluster", hint="apply the plan first"
                )
            )
        for driver in drivers:
            dname = driver["metadata"]["name"]
            dstate = str((driver.get("status") or {}).get("state") or "unknown")
            dcond = ready_condition(driver)
            msg = str(dcond.get("message") or dcond.get("reason") or "")
            if dstate == "ready":
                checks.append(Check("nvidia-driver", Status.PASS, f"{dname} ready"))
            elif dstate == "disabled":
                checks.append(
                    Check(
                        "nvidia-driver",
                        Status.FAIL,
                        f"{dname} disabled: {msg}",
                        hint="set driver.useNvidiaDriverCRD: true in the ClusterPolicy (the answers' driver.useNvidiaDriverCRD)",
                    )
                )
            else:
                checks.append(Check("nvidia-driver", Status.FAIL, f"{dname} is {dstate}: {msg}".rstrip(": ")))
    return checks


def _container(pod: Mapping[str, Any], name: str, key: str) -> dict[str, Any]:
    section = (pod.get("spec") if key == "spec" else pod.get("status")) or {}
    items = section.get("containers" if key == "spec" else "containerStatuses") or []
    return next((c for c in items if c.get("name") == name), {})


def _digest_of(image_id: str) -> str:
    return image_id.rsplit("@", 1)[-1] if "sha256:" in image_id else ""


class NodeRun:
    """The checks of one GPU node; findings go to ``emit`` as they are made."""

    def __init__(self, ctx: VerifyContext, node: NodeFacts, emit: Emit) -> None:
        self.ctx = ctx
        self.node = node
        self._emit = emit

    def emit(self, check: str, status: Status, message: str, **extra: Any) -> None:
        if status is Status.FAIL:
            self.ctx.failed.add(self.node.name)
        self._emit(Check(check, status, message, node=self.node.name, **extra))

    def line(self, stream: str, text: str) -> None:
        self._emit(LogLine(text, self.node.name, stream))

    async def run(self) -> None:
        if self.ctx.plan.driver_enabled:
            await self.driver_mode()
        else:
            await self.preinstalled_mode()

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
        name = pod["metadata"]["name"]
        spec_image = str(_container(pod, DRIVER_CONTAINER, "spec").get("image") or "")
        status = _container(pod, DRIVER_CONTAINER, "status")
        expected = self.ctx.expected.get(self.node.name, "")
        if spec_image == expected:
            self.emit("driver-image", Status.PASS, spec_image, data={"pod": name})
        else:
            self.emit(
                "driver-image",
                Status.FAIL,
                f"{name} runs {spec_image or 'no nvidia-driver-ctr'}, expected {expected}",
                hint="the operator rendered another image than planned: check the ClusterPolicy's driver fields and the node's OS/kernel labels",
            )
        waiting = (status.get("state") or {}).get("waiting")
        if waiting or "running" not in (status.get("state") or {}):
            why = f"{waiting.get('reason')}: {waiting.get('message') or ''}".rstrip(": ") if waiting else "not running"
            self.emit(
                "driver-pod",
                Status.FAIL,
                f"{name}: nvidia-driver-ctr {why}",
                hint="see `kubectl describe pod` for the events",
            )
            return
        self.digest_check(expected or spec_image, str(status.get("imageID") or ""))
        root = host_root_mount(pod, DRIVER_CONTAINER)
        smi = self.container_smi(name)
        if root:
            shell = HostShell(self.ctx.gateway, self.ctx.namespace, name, DRIVER_CONTAINER, root, self.ctx.timeout)
            await asyncio.gather(smi, self.path_checks(shell, driver=True))
        else:
            await smi
            async with ProbePod(
                self.ctx.gateway,
                self.node.name,
                self.ctx.namespace,
                self.ctx.probe_image,
                timeout=self.ctx.timeout,
                run_id=self.ctx.run_id,
            ) as shell:
                await self.path_checks(shell, driver=True)

    def digest_check(self, image: str, image_id: str) -> None:
        answer = self.ctx.digests.get(image)
        if answer is None:
            return
        running = _digest_of(image_id)
        self.line("stdout", f"image:   {image}")
        self.line("stdout", f"imageID: {image_id or '(none)'}")
        self.line("stdout", f"registry digest: {answer.digest or answer.error or 'missing'}")
        if answer.error:
            self.emit("image-digest", Status.WARN, f"cannot read the registry digest of {image}: {answer.error}")
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

    def smi_check(self, check: str, result_out: str, exit_code: int | None) -> nvsmi.SmiReport:
        report = nvsmi.parse_table(result_out, exit_code if exit_code is not None else 1)
        if not report.ok:
            self.emit(
                check,
                Status.FAIL,
                f"nvidia-smi failed: {report.error}",
                hint="see the output above; the driver is not usable on this node",
            )
            return report
        data = {"driver_version": report.driver_version, "gpus": list(report.gpus), "header": report.header_style}
        wanted = self.ctx.plan.driver.version
        branch = wanted.split(".", 1)[0] if wanted and not wanted.startswith("sha256:") else ""
        if branch and report.driver_version.split(".", 1)[0] != branch:
            self.emit(
                check, Status.FAIL, f"{report.summary()}; the plan wants the {branch} branch ({wanted})", data=data
            )
        elif self.node.gpu_count and report.gpu_count < self.node.gpu_count:
            self.emit(
                check, Status.WARN, f"{report.summary()}; the node advertises {self.node.gpu_count} GPUs", data=data
            )
        else:
            self.emit(check, Status.PASS, report.summary(), data=data)
        return report

    async def container_smi(self, pod: str) -> None:
        try:
            result = await self.ctx.gateway.exec(
                self.ctx.namespace, pod, DRIVER_CONTAINER, ["nvidia-smi"], on_line=self.line, timeout=self.ctx.timeout
            )
        except ClusterError as exc:
            self.emit(
                "nvidia-smi",
                Status.FAIL,
                f"cannot run nvidia-smi in {pod}: {exc.message}",
                hint=exc.hint or "check that the node's kubelet is reachable",
            )
            return
        self.smi_check("nvidia-smi", "\n".join(x for x in (result.stdout, result.stderr) if x), result.exit_code)

    async def preinstalled_mode(self) -> None:
        pod = self.ctx.pods.get(self.node.name)
        if pod is not None:
            self.emit(
                "driver-pod",
                Status.FAIL,
                f"driver pod {pod['metadata']['name']} runs on a node meant to use its host driver",
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
        async with ProbePod(
            self.ctx.gateway,
            self.node.name,
            self.ctx.namespace,
            self.ctx.probe_image,
            timeout=self.ctx.timeout,
            run_id=self.ctx.run_id,
        ) as shell:
            await asyncio.gather(
                self.host_smi(shell), self.path_checks(shell, driver=bool(self.ctx.plan.hostPaths.driverInstallDir))
            )

    async def host_smi(self, shell: HostShell) -> None:
        try:
            result = await shell.run(["nvidia-smi"], on_line=self.line)
        except ClusterError as exc:
            self.emit(
                "host-nvidia-smi", Status.FAIL, f"cannot run nvidia-smi on the host: {exc.message}", hint=exc.hint
            )
            return
        if self.smi_check(
            "host-nvidia-smi", "\n".join(x for x in (result.stdout, result.stderr) if x), result.exit_code
        ).ok:
            self.ctx.host_ok.add(self.node.name)

    async def path_checks(self, shell: HostShell, *, driver: bool) -> None:
        runtime = f"{self.ctx.toolkit_dir}/toolkit/nvidia-container-runtime"
        jobs = [self.mount_check(shell, "toolkit-path", runtime, "toolkit.installDir")]
        if driver:
            jobs.append(self.mount_check(shell, "driver-path", self.ctx.driver_dir, "the driver install directory"))
        jobs.append(self.drop_in_check(shell))
        await asyncio.gather(*jobs)

    async def mount_check(self, shell: HostShell, check: str, path: str, what: str) -> None:
        try:
            result = await shell.run(["findmnt", "-n", "-o", "TARGET,OPTIONS", "-T", path])
        except ClusterError as exc:
            self.emit(check, Status.FAIL, f"cannot inspect the mount of {path}: {exc.message}", hint=exc.hint)
            return
        fields = result.stdout.split()
        if result.exit_code != 0 or len(fields) < 2:
            self.emit(
                check,
                Status.WARN,
                f"findmnt -T {path} gave no answer (exit {result.exit_code})",
                detail=result.stderr or result.stdout,
            )
            return
        target, options = fields[0], fields[-1].split(",")
        if "noexec" in options:
            self.emit(
                check,
                Status.FAIL,
                f"{path} is on {target}, mounted noexec: binaries there cannot run",
                hint=f"move {what} to a path on an exec mount (e.g. /opt/nvidia), or remount {target} with exec",
                detail=result.stdout,
            )
        elif options and options[0] == "ro" and check == "toolkit-path":
            self.emit(
                check,
                Status.FAIL,
                f"{path} is on {target}, mounted read-only: the toolkit cannot install there",
                hint="set toolkit.installDir to a writable path (SLE Micro: /run/nvidia/toolkit-install)",
                detail=result.stdout,
            )
        else:
            self.emit(
                check,
                Status.PASS,
                f"{path} on {target} ({','.join(o for o in options if o in ('rw', 'ro', 'exec', 'nosuid', 'nodev')) or 'exec'})",
                detail=result.stdout,
            )

    async def drop_in_check(self, shell: HostShell) -> None:
        drop_in = self.ctx.drop_in
        try:
            result = await shell.run(["grep", "BinaryName", drop_in])
        except ClusterError as exc:
            self.emit("containerd-config", Status.FAIL, f"cannot read {drop_in}: {exc.message}", hint=exc.hint)
            return
        values = [ln.split("=", 1)[1].strip().strip("\"'") for ln in result.stdout.splitlines() if "=" in ln]
        prefix = f"{self.ctx.toolkit_dir}/toolkit/"
        if result.exit_code != 0 or not values:
            self.emit(
                "containerd-config",
                Status.FAIL,
                f"no BinaryName in {drop_in}",
                hint="the container toolkit has not configured containerd on this node yet (toolkit pod not ready?)",
                detail=result.stderr or result.stdout,
            )
        elif all(v.startswith(prefix) for v in values):
            self.emit("containerd-config", Status.PASS, f"BinaryName {values[0]}", detail=result.stdout)
        else:
            wrong = next(v for v in values if not v.startswith(prefix))
            self.emit(
                "containerd-config",
                Status.FAIL,
                f"BinaryName {wrong} is not under the live installDir {self.ctx.toolkit_dir}",
                hint="a stale drop-in from an earlier install: restart the toolkit pod on this node",
                detail=result.stdout,
            )


async def verify_nodes(ctx: VerifyContext, nodes: list[NodeFacts], concurrency: int) -> AsyncGenerator[Item, None]:
    """Verify ``nodes`` concurrently, yielding findings as they arrive; cleans up on cancellation."""
    queue: asyncio.Queue[Item | None] = asyncio.Queue()
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(node: NodeFacts) -> None:
        async with semaphore:
            run = NodeRun(ctx, node, queue.put_nowait)
            try:
                await run.run()
            except ClusterError as exc:
                run.emit("node", Status.FAIL, exc.message, hint=exc.hint)
            except Exception as exc:  # a bug in one node's checks must not end the others
                run.emit("node", Status.FAIL, f"unexpected error: {exc.__class__.__name__}: {exc}")

    tasks = [asyncio.create_task(one(node)) for node in nodes]

    async def finish() -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        queue.put_nowait(None)

    closer = asyncio.create_task(finish())
    try:
        while (item := await queue.get()) is not None:
            yield item
    finally:
        for task in (*tasks, closer):
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=ctx.timeout)
        with contextlib.suppress(Exception):
            await asyncio.shield(sweep(ctx.gateway, ctx.namespace, ctx.run_id))


async def driver_pods(gateway: Gateway, namespace: str) -> dict[str, dict[str, Any]]:
    """Node -> its driver pod (the newest one when a node has several)."""
    pods = await gateway.list_pods(namespace, label_selector=DRIVER_SELECTOR)
    by_node: dict[str, dict[str, Any]] = {}
    for pod in sorted(pods, key=lambda p: str(p["metadata"].get("creationTimestamp") or "")):
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node and not (pod["metadata"].get("deletionTimestamp")):
            by_node[node] = pod
    return by_node
