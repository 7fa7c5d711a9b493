"""Running commands on a GPU node's host, in a short-lived probe pod.

The operator's ``nvidia-driver-ctr`` does not mount the host's ``/`` (and pre-installed mode has no
driver pod at all), so a probe pod is created on the node (the host probe's path for one node; many
nodes share one DaemonSet, :mod:`wizard.cluster.probes.probeset`): ``nodeName`` pinned, privileged, host
``/`` read-only at ``/host``,
``activeDeadlineSeconds`` so that a crash of the wizard cannot leave it running forever (followed by a watch of
that one pod until it runs, never read on a timer), and deleted
as soon as the node's checks are done, also on cancellation. A pod that could not be deleted is
never passed over in silence: it becomes a :class:`Leftover`, logged as a warning (the CLI prints it
on stderr) and reported by the caller with the exact ``kubectl delete pod`` command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import shlex
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wizard.bundled import operator_values
from wizard.cluster.errors import ClusterError
from wizard.cluster.gateway import Gateway, Gone
from wizard.engine.naming import image_path
from wizard.engine.nodescript import Step, StepResult, StepSplitter, script
from wizard.engine.operand_images import operator_registry, private_repository
from wizard.engine.results import Check, Status

log = logging.getLogger(__name__)

PROBE_CONTAINER = "probe"
HOST_MOUNT = "/host"
PROBE_LABEL = "app.kubernetes.io/name=gpu-wizard-probe"
_FAILED_WAITING = frozenset(
    {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CrashLoopBackOff"}
)


def manager_image(policy: Mapping[str, Any] | None, bundle: str, registry: str = "") -> str:
    """The k8s-driver-manager image: the live ClusterPolicy's (it is pullable there), else the release's chart default
    in ``registry`` (the private registry the cluster pulls from, :mod:`wizard.engine.operand_images`) when given.

    With ``registry``, a live image outside it is not taken: a policy left at nvcr.io behind a private registry
    (a failed rollout's) names an image the nodes cannot pull, and the probe pods would never start."""
    for source, live in (
        ((((policy or {}).get("spec") or {}).get("driver") or {}).get("manager"), True),
        (operator_values(bundle)["driver"]["manager"], False),
    ):
        if isinstance(source, Mapping) and source.get("image"):
            repository = str(source.get("repository") or "")
            if live and registry and not f"{repository}/".startswith(f"{registry.rstrip('/')}/"):
                continue
            if not live and repository:
                repository = private_repository(repository, registry)
            try:
                return image_path(repository, str(source["image"]), str(source.get("version") or ""))
            except ValueError:
                continue
    return "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"


def probe_registry(operand_registry: str, operator_image: str, release: str) -> str:
    """Where a probe pod's image comes from before any policy runs: the plan's operand registry, else the running
    operator's private one (an air-gapped cluster reaches nothing else)."""
    return operand_registry or operator_registry(operator_image, release)


def probe_pod(node: str, namespace: str, image: str, *, run_id: str = "", deadline_s: int = 600) -> dict[str, Any]:
    """The probe pod for one node (``run_id`` marks the pods of one verification, for the final sweep)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": "gpu-wizard-probe-",
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/name": "gpu-wizard-probe",
                "app.kubernetes.io/managed-by": "gpu-wizard",
            },
            "annotations": {"gpu-wizard/node": node, "gpu-wizard/run": run_id},
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Always",
            "activeDeadlineSeconds": deadline_s,
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "tolerations": [{"operator": "Exists"}],
            "priorityClassName": "system-node-critical",
            "containers": [
                {
                    "name": PROBE_CONTAINER,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sleep", str(deadline_s)],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host-root", "mountPath": HOST_MOUNT, "readOnly": True}],
                }
            ],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/"}}],
        },
    }


def _probe_state(pod: Mapping[str, Any]) -> tuple[str, str]:
    """("running" | "waiting" | "failed", why) of the probe container."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Failed", "Succeeded"):
        return (
            "failed",
            f"probe pod ended ({status.get('phase')}: {status.get('reason') or status.get('message') or 'no reason'})",
        )
    for cs in status.get("containerStatuses") or []:
        if cs.get("name") != PROBE_CONTAINER:
            continue
        state = cs.get("state") or {}
        if "running" in state:
            return "running", ""
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _FAILED_WAITING:
            return "failed", f"{waiting.get('reason')}: {waiting.get('message') or ''}".rstrip(": ")
    return "waiting", str(status.get("phase") or "Pending")


@dataclass(frozen=True)
class Leftover:
    """A privileged probe pod (or the probe DaemonSet) that could not be deleted: the user must delete it."""

    namespace: str
    name: str
    node: str
    why: str
    kind: str = "pod"
    """``pod`` or ``daemonset``."""

    @property
    def command(self) -> str:
        return shlex.join(["kubectl", "delete", self.kind, "-n", self.namespace, self.name])

    @property
    def message(self) -> str:
        on = f" on {self.node}" if self.node else ""
        return (
            f"privileged probe {self.kind} {self.namespace}/{self.name}{on} could not be deleted ({self.why}); "
            f"delete it: {self.command}"
        )

    def check(self) -> Check:
        """The warning a verification or path check reports."""
        data = {"namespace": self.namespace, self.kind: self.name, "command": self.command}
        return Check("probe-pod", Status.WARN, self.message, node=self.node, hint=f"run: {self.command}", data=data)


def _left(namespace: str, name: str, node: str, exc: ClusterError) -> Leftover:
    leftover = Leftover(namespace, name, node, exc.message)
    log.warning(leftover.message)
    return leftover


@dataclass
class Shell:
    """A container to run a node's check script in; ``root`` is where it sees the host's ``/`` ("": it does not)."""

    gateway: Gateway
    namespace: str
    pod: str
    container: str
    root: str
    timeout: float

    async def run_steps(self, steps: Sequence[Step], on_lines: Callable[[str, list[str]], None]) -> list[StepResult]:
        """Run the steps as one ``sh -c`` exec; ``on_lines`` gets the lines of streaming steps as they arrive."""
        splitter = StepSplitter(steps, on_lines)
        argv = ["sh", "-c", script(steps, self.root)]
        await self.gateway.exec(
            self.namespace, self.pod, self.container, argv, on_lines=splitter.feed_lines, timeout=self.timeout
        )
        return splitter.results()


class ProbePod:
    """``async with ProbePod(...) as shell``: a probe pod on the node for the block's duration."""

    def __init__(
        self,
        gateway: Gateway,
        node: str,
        namespace: str,
        image: str,
        *,
        timeout: float,
        run_id: str = "",
    ) -> None:
        self.gateway = gateway
        self.run_id = run_id
        self.node = node
        self.namespace = namespace
        self.image = image
        self.timeout = timeout
        self.name = ""
        self.leftover: Leftover | None = None
        """Set when the pod could not be deleted on the way out."""

    async def __aenter__(self) -> Shell:
        created = await self.gateway.create_pod(
            self.namespace, probe_pod(self.node, self.namespace, self.image, run_id=self.run_id)
        )
        self.name = str(created["metadata"]["name"])
        why = "Pending"
        try:
            async with asyncio.timeout(self.timeout):
                states = self._states(created)
                async with contextlib.aclosing(states):
                    async for pod in states:
                        state, why = _probe_state(pod)
                        if state == "running":
                            return Shell(
                                self.gateway, self.namespace, self.name, PROBE_CONTAINER, HOST_MOUNT, self.timeout
                            )
                        if state == "failed":
                            raise ClusterError(
                                f"probe pod on {self.node} cannot start ({why})",
                                f"the probe image {self.image} must be pullable on the node; pass --probe-image with a mirrored copy",
                            )
        except TimeoutError:
            pass
        raise ClusterError(f"probe pod on {self.node} did not start within {self.timeout:g}s ({why})")

    async def _states(self, created: Mapping[str, Any]) -> AsyncGenerator[Mapping[str, Any], None]:
        """The pod as created, then each state a watch of that one pod reports (opened again when the server ends
        it; the pod read once when its version is too old to resume from)."""
        yield created
        version = str(created["metadata"].get("resourceVersion") or "")
        while True:
            events = self.gateway.watch_resource(
                "pods",
                version,
                namespace=self.namespace,
                field_selector=f"metadata.name={self.name}",
                timeout_seconds=max(1, math.ceil(self.timeout)),
            )
            try:
                async with contextlib.aclosing(events) as stream:
                    async for kind, pod in stream:
                        version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
                        if kind == "DELETED":
                            raise ClusterError(f"probe pod {self.name} on {self.node} vanished before it started")
                        if kind in ("ADDED", "MODIFIED"):
                            yield pod
            except Gone:
                read = await self.gateway.read_pod(self.namespace, self.name)
                if read is None:
                    raise ClusterError(f"probe pod {self.name} on {self.node} vanished before it started") from None
                version = str(read["metadata"].get("resourceVersion") or "")
                yield read

    async def __aexit__(self, *exc: object) -> None:
        if self.name:
            # Shielded: a Ctrl-C while verifying must still remove the privileged pod.
            await asyncio.shield(self._delete())

    async def _delete(self) -> None:
        try:
            await self.gateway.delete_pod(self.namespace, self.name)
        except ClusterError as exc:
            self.leftover = _left(self.namespace, self.name, self.node, exc)


async def sweep(gateway: Gateway, namespace: str, run_id: str, *, known: set[str] | None = None) -> list[Leftover]:
    """Delete probe pods of one run that are still there (a create interrupted after the server acted);
    the ones that could not be deleted are returned (and logged). ``known`` pods already failed to
    delete and were reported: they are not tried again."""
    try:
        pods = await gateway.list_pods(namespace, label_selector=PROBE_LABEL)
    except ClusterError as exc:
        log.warning(
            "cannot check for leftover probe pods (%s); look with: %s",
            exc.message,
            shlex.join(["kubectl", "get", "pods", "-n", namespace, "-l", PROBE_LABEL]),
        )
        return []
    mine = [p for p in pods if ((p["metadata"].get("annotations") or {}).get("gpu-wizard/run")) == run_id]
    leftovers = []
    for pod in mine:
        name = str(pod["metadata"]["name"])
        if name in (known or set()):
            continue
        try:
            await gateway.delete_pod(namespace, name)
        except ClusterError as exc:
            node = str((pod["metadata"].get("annotations") or {}).get("gpu-wizard/node") or "")
            leftovers.append(_left(namespace, name, node, exc))
    return leftovers
