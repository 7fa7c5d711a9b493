"""The checks of one GPU node: its driver pod and image, the running digest, ``nvidia-smi`` and the host results.

:class:`NodeRun` reports each finding as it is made (to the run's outbox, :mod:`wizard.cluster.verification.verify`):
in the driver modes the driver pod's image against the rendered one, its ``imageID`` against the
registry's digest, ``nvidia-smi`` run in ``nvidia-driver-ctr`` by exec (its output streamed line by
line); in pre-installed mode the deploy label; in every mode the node's host probe results (the
toolkit's mount, the driver root, the containerd drop-in's ``BinaryName``, the host's ``nvidia-smi``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wizard.cluster.errors import ClusterError
from wizard.cluster.probes.hostprobe import truncation_check
from wizard.cluster.probes.probe import Shell
from wizard.cluster.verification.verify_context import VerifyContext
from wizard.engine import nvsmi
from wizard.engine.driver_version import branch_of
from wizard.engine.facts import NodeFacts
from wizard.engine.leftovers import stray_pod_hint
from wizard.engine.naming import DIGEST_PREFIX
from wizard.engine.nodescript import Step, StepResult, drop_in_finding, mount_finding
from wizard.engine.operator_names import DRIVER_CONTAINER
from wizard.engine.results import Check, LogLine, Status

Item = Check | LogLine
Emit = Callable[[Item], None]
EmitMany = Callable[[list[Item]], None]


def _digest_of(image_id: str) -> str:
    return image_id.rsplit("@", 1)[-1] if "sha256:" in image_id else ""


class NodeRun:
    """The checks of one GPU node; findings go to ``emit`` as they are made, output lines to ``emit_many``
    a batch at a time."""

    def __init__(self, ctx: VerifyContext, node: NodeFacts, emit: Emit, emit_many: EmitMany) -> None:
        self.ctx = ctx
        self.node = node
        self._emit = emit
        self._emit_many = emit_many
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

    def lines(self, stream: str, texts: list[str]) -> None:
        """Output lines, handed on together (a node's ``nvidia-smi`` table is ~50 of them)."""
        node = self.node.name
        self._emit_many([LogLine(text, node, stream) for text in texts])

    async def run_steps(self, shell: Shell, steps: list[Step]) -> None:
        """Run ``steps`` in one exec and report each; an exec that fails fails every one of its checks."""
        try:
            results = await shell.run_steps(steps, self.lines)
        except ClusterError as exc:
            self.fail_steps(
                steps, f"in {shell.pod}: {exc.message}", exc.hint or "check that the node's kubelet is reachable"
            )
            return
        for step, result in zip(steps, results, strict=True):
            self.report(step, result)

    def fail_steps(self, steps: list[Step], where_and_why: str, hint: str) -> None:
        """Every one of ``steps`` failed: their command could not run (``where_and_why``: "in POD: …")."""
        for step in steps:
            self.emit(step.check, Status.FAIL, f"cannot run {step.argv[0]} {where_and_why}", hint=hint)

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

    def excluded(self, has_pod: bool) -> None:
        """A node the plan keeps out of the driver rollout (GeForce/TITAN): its label says so and no driver pod runs."""
        label = self.node.deploy_driver or "unset"
        if label == "false" and not has_pod:
            message = "kept out of the driver rollout as planned (nvidia.com/gpu.deploy.driver=false, no driver pod)"
            self.emit("driver-pod", Status.PASS, message)
            return
        running = "a driver pod runs there" if has_pod else "no driver pod"
        self.emit(
            "driver-pod",
            Status.FAIL,
            f"planned out of the driver rollout, but nvidia.com/gpu.deploy.driver={label} ({running})",
            hint="apply the plan again: the apply labels the node nvidia.com/gpu.deploy.driver=false",
        )

    async def host_checks(self) -> None:
        """Report this node's host probe results (waits for them: the probe runs for every node at once)."""
        steps = self.ctx.host_steps()
        run = await self.ctx.host_result(self.node.name)
        if not run.ran:
            self.fail_steps(steps, f"on the host: {run.error}", run.hint or "check that the node is Ready")
            return
        for step, result in zip(steps, run.results, strict=True):
            if step.stream and result.output:
                self.lines("stdout", result.output.splitlines())
            self.report(step, result)
        if run.truncated:
            found = truncation_check(self.node.name, run.truncated)
            self.emit(found.check, found.status, found.message, hint=found.hint, data=found.data)

    async def driver_mode(self) -> None:
        pod = self.ctx.pods.get(self.node.name)
        if self.node.name in self.ctx.plan.driver.excludeNodes:
            self.excluded(pod is not None)
            return
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
        branch = branch_of(wanted) if wanted and not wanted.startswith(DIGEST_PREFIX) else ""
        if branch and branch_of(report.driver_version) != branch:
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
                hint=stray_pod_hint(pod.daemonset, self.ctx.namespace),
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
